package franz

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A group source consuming two topics, one of which is deleted: Run goes
// on consuming the other (its commits exact) and, once the topic is
// created again, reports it gone (without a fetch error logged per fetch)
// and consumes it from its start.
func TestSourceTopicDeletedOtherTopic(t *testing.T) {
	const group = "g"
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})

	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			seen <- fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
			return nil
		})
	}
	gone := make(chan string, 16)
	var fetchErrors atomic.Int64
	src, err := NewSource(Config{Brokers: b.Addrs(), Group: group, Topics: []string{"orders", "stays"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second,
		Logger: slog.New(countingHandler{goneHandler{gone}, "fetch error", &fetchErrors, kafkatest.Logger(t)})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()

	deadline := time.After(groupRecreateWait)
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-seen:
				if !want[v] {
					t.Errorf("record %s delivered, not awaited", v)
				}
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v", want, groupRecreateWait)
			}
		}
	}
	await(map[string]bool{"orders:old-0@0": true, "stays:stay-0@0": true})
	waitCommitted(t, b, group, "orders", 1)

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), groupRecreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	// kgo fails the deleted topic's partitions with the retryable
	// UNKNOWN_TOPIC_OR_PARTITION, which it keeps to itself: the other
	// topic is consumed on.
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-1")})
	await(map[string]bool{"stays:stay-1@1": true})
	waitCommitted(t, b, group, "stays", 2)

	// Created again later: consumed from its start.
	if err := b.CreateTopicContext(dctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(dctx, &kgo.Record{Value: []byte("new-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	await(map[string]bool{"orders:new-0@0": true})
	select {
	case got := <-gone:
		if got != "orders" {
			t.Fatalf("the source reported topic %q gone, want orders", got)
		}
	default:
		t.Fatal("the source did not report orders gone")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(groupRecreateWait):
		t.Fatalf("Run did not return within %v of its context's end", groupRecreateWait)
	}
	if got := b.Committed(t, group, "stays"); got[0] != 2 || len(got) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 2}", got)
	}
	if got := b.Committed(t, group, "orders"); got[0] != 1 || len(got) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 1}", got)
	}
	// kgo reports UNKNOWN_TOPIC_ID only once it persisted; the source
	// then stops fetching the old topic at once.
	if n := fetchErrors.Load(); n > 20 {
		t.Errorf("%d fetch errors logged, want the deleted topic handled without a warning per fetch", n)
	}
}

// countingHandler counts the logs whose message is msg and passes every
// log on to next, and to also.
type countingHandler struct {
	next slog.Handler
	msg  string
	n    *atomic.Int64
	also *slog.Logger // kafkatest.Logger, or nil
}

func (h countingHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	if h.also != nil {
		_ = h.also.Handler().Handle(ctx, r)
	}
	return h.next.Handle(ctx, r)
}

func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }
