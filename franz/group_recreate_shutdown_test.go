package franz

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A group source stopped as it reports a recreated topic gone (its
// partitions lost, the topic purged and added back: a rebalance starts):
// Run returns nil at once, and what the group holds for the new topic
// is no more than what was processed of it.
func TestSourceTopicRecreatedStoppedWhenGone(t *testing.T) {
	b := kafkatest.NewBroker(t)
	testStoppedWhenGone(t, b, nil)
}

// As TestSourceTopicRecreatedStoppedWhenGone, exactly-once.
func TestTransactionalSourceTopicRecreatedStoppedWhenGone(t *testing.T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "out", 1)
	testStoppedWhenGone(t, b, func(src *Source) (func(pipeline.Stream[sluice.Record]) pipeline.End, func() error) {
		p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "recreate-1"}})
		if err != nil {
			t.Fatal(err)
		}
		return func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) {
				return sluice.Message{Value: r.Value}, nil
			})
		}, p.Close
	})
}

// cancelOnGone cancels when the source reports a topic gone.
type cancelOnGone struct{ cancel context.CancelFunc }

func (h cancelOnGone) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOnGone) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "the broker no longer knows the topic") {
		h.cancel()
	}
	return nil
}
func (h cancelOnGone) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelOnGone) WithGroup(string) slog.Handler      { return h }

func testStoppedWhenGone(t *testing.T, b *kafkatest.Broker, txn func(*Source) (func(pipeline.Stream[sluice.Record]) pipeline.End, func() error)) {
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second,
		Logger: slog.New(cancelOnGone{cancel})}})
	if err != nil {
		t.Fatal(err)
	}
	end := func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(context.Context, sluice.Record) error { return nil })
	}
	closeP := func() error { return nil }
	if txn != nil {
		end, closeP = txn(src)
	}
	var newSeen atomic.Int64
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return end(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if strings.HasPrefix(string(r.Value), "new-") {
				newSeen.Add(1)
			}
			return r, nil
		}))
	}
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 2})
	kafkadriver.RecreateTopic(t, b, topic, 1)
	produceFresh(t, b, topic, sluice.Record{Value: []byte("new-0")}, sluice.Record{Value: []byte("new-1")}, sluice.Record{Value: []byte("new-2")})
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(2 * kafkadriver.RecreateWait):
		t.Fatalf("Run did not return within %v", 2*kafkadriver.RecreateWait)
	}
	if ctx.Err() == nil {
		t.Fatal("Run returned before the topic was reported gone")
	}
	if err := closeP(); err != nil {
		t.Fatal(err)
	}
	got := b.Committed(t, group, topic)
	if c, ok := got[0]; len(got) > 1 || ok && c != newSeen.Load() {
		t.Fatalf("committed offsets of the recreated %s = %v, want none or {0: %d} (the new records processed)", topic, got, newSeen.Load())
	}
	t.Logf("committed %v, new records processed %d", got, newSeen.Load())
}
