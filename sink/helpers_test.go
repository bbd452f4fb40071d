package sink_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

const wait = 60 * time.Second

// newProducer returns a producer on b with overrides, closed when the test
// ends: after Run returned (cleanups run last in first out) every delivery
// was reported, so Close has nothing to give up on and must return nil.
func newProducer(t *testing.T, b *kafkatest.Broker, overrides map[string]any) *sink.Producer {
	t.Helper()
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: b.Addrs(), Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close after Run returned = %v, want nil", err)
		}
	})
	return p
}

// newSource returns a librdkafka source of group on topic with fast
// commits and heartbeats.
func newSource(t testing.TB, brokers []string, group, topic string) *source.Kafka {
	t.Helper()
	src, err := source.NewKafka(source.Config{
		Brokers:        brokers,
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

// start runs the pipeline in the background until the test ends.
func start(t *testing.T, src pipeline.Source, build pipeline.Builder, opts ...pipeline.Option) *testkit.Running {
	t.Helper()
	return testkit.Start(t, src, build, opts...)
}

// stop shuts Run down and fails the test unless it returns nil.
func stop(t *testing.T, r *testkit.Running) {
	t.Helper()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// waitCommitted waits until the group's commits equal want.
func waitCommitted(t *testing.T, b *kafkatest.Broker, r *testkit.Running, group, topic string, want map[int32]int64) {
	t.Helper()
	r.WaitUntil(t, fmt.Sprintf("commits of %s on %s to be %v", group, topic, want), func() bool {
		return maps.Equal(b.Committed(t, group, topic), want)
	})
}

// input makes n records for each partition with a key, a value, a
// timestamp and three headers (one key repeated).
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

// toMsg maps an input record to the output message: same key, value
// prefixed, the input's headers plus one naming its origin.
func toMsg(r pipeline.Record) (sink.Message, error) {
	hs := make([]pipeline.Header, 0, len(r.Headers)+1)
	hs = append(hs, r.Headers...)
	hs = append(hs, pipeline.Header{Key: "from", Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)})
	return sink.Message{Key: r.Key, Value: append([]byte("out:"), r.Value...), Headers: hs}, nil
}
