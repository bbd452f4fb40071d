package kafkadriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// RunOptions configures a scenario's [Run].
type RunOptions struct {
	// Key names a processed record in what Await wants; nil names it
	// "topic:value@offset".
	Key func(sluice.Record) string

	// Once reports whether the record of a key must be delivered once,
	// and only while awaited; nil: every record.
	Once func(key string) bool
}

// Run is a pipeline.Run of a source in a scenario, whose graph reports
// every record it processes by its key (RunOptions.Key). Each wait of it
// is bounded by RecreateWait from its start.
type Run struct {
	t        *testing.T
	seen     chan string
	done     chan error
	cancel   context.CancelFunc
	deadline <-chan time.Time
	key      func(sluice.Record) string
	once     func(string) bool
	got      map[string]int
}

// StartRun starts pipeline.Run of src; the test ends it with Stop.
func StartRun(t *testing.T, src sluice.Source, o RunOptions) *Run {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &Run{t: t, seen: make(chan string, 256), done: make(chan error, 1), cancel: cancel,
		deadline: time.After(RecreateWait), key: o.Key, once: o.Once, got: map[string]int{}}
	if r.key == nil {
		r.key = func(rec sluice.Record) string { return fmt.Sprintf("%s:%s@%d", rec.Topic, rec.Value, rec.Offset) }
	}
	if r.once == nil {
		r.once = func(string) bool { return true }
	}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, rec sluice.Record) error {
			r.seen <- r.key(rec)
			return nil
		})
	}
	go func() { r.done <- pipeline.Run(ctx, src, build) }()
	return r
}

// Await waits until every record of want was processed (and deletes them
// from want). A Once record delivered while not awaited, or twice, fails
// the test; so does Run returning meanwhile.
func (r *Run) Await(want map[string]bool) {
	r.t.Helper()
	for len(want) > 0 {
		select {
		case v := <-r.seen:
			r.got[v]++
			if r.once(v) && (!want[v] || r.got[v] > 1) {
				r.t.Errorf("record %s delivered (%d times), not awaited", v, r.got[v])
			}
			delete(want, v)
		case err := <-r.done:
			r.t.Fatalf("Run returned %v while records %v were awaited", err, want)
		case <-r.deadline:
			r.t.Fatalf("records %v not delivered within %v (delivered: %v)", want, RecreateWait, r.got)
		}
	}
}

// Stop cancels Run and wants it to return nil within RecreateWait, and no
// Once record processed after the awaited ones.
func (r *Run) Stop() {
	r.t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(RecreateWait):
		r.t.Fatalf("Run did not return within %v of its context's end", RecreateWait)
	}
	for {
		select {
		case v := <-r.seen:
			if r.once(v) {
				r.t.Errorf("record %s delivered again after the awaited ones", v)
			}
		default:
			return
		}
	}
}

// NewProducer returns a function producing one value to a partition of
// topic, through a client made after the topic was (re)created: a kgo
// client that saw a topic's old ID refuses its new one.
func NewProducer(t *testing.T, b *kafkatest.Broker, topic string) func(partition int32, value string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return func(partition int32, value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), RecreateWait)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// Numbered returns records valued fmt.Sprintf(format, i) for i from from
// up to (not including) to.
func Numbered(format string, from, to int) []sluice.Record {
	recs := make([]sluice.Record, 0, to-from)
	for i := range to - from {
		recs = append(recs, sluice.Record{Value: fmt.Appendf(nil, format, from+i)})
	}
	return recs
}
