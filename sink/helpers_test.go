package sink_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit"
)

const wait = 60 * time.Second

func newProducer(t *testing.T, b *testkit.Broker, overrides map[string]any) *sink.Producer {
	t.Helper()
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: b.Addrs(), Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close) // idempotent; after Run returned
	return p
}

func newSource(t *testing.T, b *testkit.Broker, group, topic string) *source.Kafka {
	t.Helper()
	src, err := source.NewKafka(source.Config{
		Brokers:        b.Addrs(),
		Group:          group,
		Topics:         []string{topic},
		CommitInterval: 50 * time.Millisecond,
		Overrides:      map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 6000},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func start(t *testing.T, src pipeline.Source, build pipeline.Builder, opts ...pipeline.Option) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = pipeline.Run(ctx, src, build, opts...)
	}()
	t.Cleanup(func() { r.cancel(); <-r.done })
	return r
}

// wait waits for Run to return (by itself, or after stop).
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(wait):
		t.Fatalf("Run did not return within %v", wait)
		return nil
	}
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// waitCommitted polls the group's commits until they equal want.
func waitCommitted(t *testing.T, b *testkit.Broker, r *running, group, topic string, want map[int32]int64) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := b.Committed(t, group, topic)
		if maps.Equal(got, want) {
			return
		}
		select {
		case <-tick.C:
		case <-r.done:
			t.Fatalf("Run returned %v with %v committed, want %v", r.err, got, want)
		case <-deadline.C:
			t.Fatalf("committed %v after %v, want %v", got, wait, want)
		}
	}
}

// input makes n records for each partition with a key, a value, a
// timestamp and two headers (one repeated key, to check order).
func input(partitions int32, first, n int) []pipeline.Record {
	ts := time.UnixMilli(1_700_000_000_000)
	var out []pipeline.Record
	for i := first; i < first+n; i++ {
		for p := range partitions {
			out = append(out, pipeline.Record{
				Partition: p,
				Key:       fmt.Appendf(nil, "k%d-%d", p, i),
				Value:     fmt.Appendf(nil, "v%d-%d", p, i),
				Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
				Headers: []pipeline.Header{
					{Key: "h", Value: fmt.Appendf(nil, "%d", i)},
					{Key: "h", Value: []byte("second")},
					{Key: "empty", Value: nil},
				},
			})
		}
	}
	return out
}

func headersString(hs []pipeline.Header) string {
	s := ""
	for _, h := range hs {
		s += fmt.Sprintf("%s=%q;", h.Key, h.Value)
	}
	return s
}
