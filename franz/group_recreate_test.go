package franz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic deleted and recreated under the same name while the source
// consumes it (kafkadriver.TopicRecreated): the new topic first gets 2
// records (fewer than the old one's 5: the old position is out of
// range), then 5 more.
func TestSourceTopicRecreated(t *testing.T) { topicRecreated(t, 2) }

// As TestSourceTopicRecreated, the new topic getting its 7 records at
// once: more than the old one had, so that the old topic's position (5)
// is a valid offset of the new one, which must not be where it is
// consumed from (records 0 to 4 would be lost).
func TestSourceTopicRecreatedLonger(t *testing.T) { topicRecreated(t, 7) }

// A record of a topic that is deleted and recreated while the record is
// being processed: it finishes after the recreation, before the client
// reports the old topic ID unknown. Its offset (the old topic's) must not
// be committed onto the new topic: every record of the new topic is
// delivered from its start, and the group's committed offset of the new
// topic is exactly what was processed of it.
func TestSourceTopicRecreatedRecordInFlight(t *testing.T) { recordInFlight(t, doneEnd) }

// As TestSourceTopicRecreatedRecordInFlight, exactly-once: the records
// are produced to topic out through a transactional producer bound to the
// source. Each record of the new topic is output once (read_committed).
func TestTransactionalSourceTopicRecreatedRecordInFlight(t *testing.T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "out", 1)
	src := newRecreateSource(t, b)
	p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "recreate-1"}})
	if err != nil {
		t.Fatal(err)
	}
	testRecordInFlight(t, b, src, func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Value: []byte(strings.ToUpper(string(r.Value)))}, nil
		})
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	count := map[string]int{}
	for n := 0; n < 7; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("outputs of the new topic read: %v", count)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), "NEW-") {
				count[string(r.Value)]++
				n++
			}
		})
	}
	for i := range 7 {
		if v := fmt.Sprintf("NEW-%d", i); count[v] != 1 {
			t.Errorf("output %s committed %d times, want 1 (all: %v)", v, count[v], count)
		}
	}
}

// testRecordInFlight runs src on topic orders of b, its records passing
// through a stage that holds old-4 until the topic was recreated, then
// through end.
func testRecordInFlight(t *testing.T, b *kafkatest.Broker, src sluice.Source, end func(pipeline.Stream[sluice.Record]) pipeline.End) {
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, kafkadriver.Numbered("old-%d", 0, 5)...)

	g, build := newHeldGraph("old-4", valueOffset, end)
	cancel, done := startRun(t, src, build)
	deadline := time.After(kafkadriver.RecreateWait)
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-g.seen:
				if !want[v] && strings.HasPrefix(v, "new-") {
					t.Errorf("unexpected record %s", v)
				}
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v", want, kafkadriver.RecreateWait)
			}
		}
	}
	await(map[string]bool{"old-0@0": true, "old-1@1": true, "old-2@2": true, "old-3@3": true})
	g.waitHeld(t, deadline)
	kafkadriver.RecreateTopic(t, b, topic, 1)
	close(g.release)
	want := map[string]bool{}
	for i := range 7 {
		want[fmt.Sprintf("new-%d@%d", i, i)] = true
	}
	produceFresh(t, b, topic, kafkadriver.Numbered("new-%d", 0, 7)...)
	await(want)
	stopRun(t, cancel, done)
	if got := b.Committed(t, group, topic); got[0] != 7 || len(got) != 1 {
		t.Fatalf("committed offsets of %s = %v, want {0: 7}", topic, got)
	}
}

// produceFresh produces recs to topic with a new client: the broker's
// own producer may hold the ID of a topic since recreated.
func produceFresh(t *testing.T, b *kafkatest.Broker, topic string, recs ...sluice.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	for _, r := range recs {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: r.Value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// A group source stopped right after a topic it consumes was deleted and
// recreated, an old record finished in between: Run returns nil at once,
// and nothing of the old topic is committed onto the new one.
func TestSourceTopicRecreatedStopped(t *testing.T) { recreatedStopped(t, doneEnd) }

// As TestSourceTopicRecreatedStopped, exactly-once: the old record's
// output is in the transaction open at the stop, which must not commit
// the old offset onto the new topic; Run returns nil (the transaction
// aborted: the topic is gone).
func TestTransactionalSourceTopicRecreatedStopped(t *testing.T) { recreatedStopped(t, txnEnd) }

func testRecreatedStopped(t *testing.T, b *kafkatest.Broker, src sluice.Source, end func(pipeline.Stream[sluice.Record]) pipeline.End) {
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	entered := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return end(stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			if string(r.Value) == "old-1" {
				close(entered)
				<-release
				close(finished)
			}
			return r, nil
		}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("Run = %v before old-1 was delivered", err)
	case <-time.After(kafkadriver.RecreateWait):
		t.Fatal("old-1 not delivered")
	}
	kafkadriver.RecreateTopic(t, b, topic, 1)
	close(release)
	<-finished
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(kafkadriver.RecreateWait):
		t.Fatalf("Run did not return within %v of its context's end", kafkadriver.RecreateWait)
	}
	if got := b.Committed(t, group, topic); len(got) != 0 {
		t.Fatalf("committed offsets of the recreated %s = %v, want none", topic, got)
	}
}

// As TestSourceTopicRecreatedRecordInFlight, the client speaking the
// protocol of Kafka 3.9 (kgo.MaxVersions), whose OffsetCommit names
// topics by name, not by ID: the old record's offset must not be
// committed onto the new topic either.
func TestSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	recordInFlight(t, doneEnd, kafka39Protocol...)
}

// As TestTransactionalSourceTopicRecreatedRecordInFlight, the client
// speaking the protocol of Kafka 3.9 (TxnOffsetCommit by topic name).
func TestTransactionalSourceTopicRecreatedRecordInFlightKafka39(t *testing.T) {
	recordInFlight(t, txnEnd, kafka39Protocol...)
}

// recreatedEnd makes the end of a recreated topic test's graph, the
// records of src (on b) flowing into it.
type recreatedEnd func(t *testing.T, b *kafkatest.Broker, src *Source) func(pipeline.Stream[sluice.Record]) pipeline.End

// doneEnd is a recreatedEnd whose graph is done with each record at once.
func doneEnd(*testing.T, *kafkatest.Broker, *Source) func(pipeline.Stream[sluice.Record]) pipeline.End {
	return func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(context.Context, sluice.Record) error { return nil })
	}
}

// txnEnd is a recreatedEnd of an exactly-once graph of the recreated topic
// tests: a transactional producer bound to src (created here, closed when
// the test ends, which must succeed) producing each record's value to
// topic out, created here on b.
func txnEnd(t *testing.T, b *kafkatest.Broker, src *Source) func(pipeline.Stream[sluice.Record]) pipeline.End {
	t.Helper()
	b.CreateTopic(t, "out", 1)
	p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "recreate-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Value: r.Value}, nil
		})
	}
}

// topicRecreated runs kafkadriver.TopicRecreated on a new broker with a
// source whose client is made with opts, the new topic first getting
// newRecords records.
func topicRecreated(t *testing.T, newRecords int, opts ...kgo.Opt) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newRecreateSource(t, b, opts...), newRecords)
}

// recordInFlight runs testRecordInFlight on a new broker with a source
// whose client is made with opts, its graph ending in what end makes.
func recordInFlight(t *testing.T, end recreatedEnd, opts ...kgo.Opt) {
	b := kafkatest.NewBroker(t)
	src := newRecreateSource(t, b, opts...)
	testRecordInFlight(t, b, src, end(t, b, src))
}

// recreatedStopped runs testRecreatedStopped on a new broker, its graph
// ending in what end makes.
func recreatedStopped(t *testing.T, end recreatedEnd) {
	b := kafkatest.NewBroker(t)
	src := newRecreateSource(t, b)
	testRecreatedStopped(t, b, src, end(t, b, src))
}

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
