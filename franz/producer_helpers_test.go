package franz_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

const wait = 60 * time.Second

// newSource returns a franz source of group on topic with fast commits
// and heartbeats.
func newSource(t *testing.T, b *kafkatest.Broker, group, topic string) *franz.Source {
	t.Helper()
	src, err := franz.NewSource(franz.Config{
		Brokers:        b.Addrs(),
		Group:          group,
		Topics:         []string{topic},
		CommitInterval: 50 * time.Millisecond,
		Opts:           []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
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
// timestamp and three headers (one key repeated, to check order).
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
func toMsg(r pipeline.Record) (pipeline.Message, error) {
	hs := make([]pipeline.Header, 0, len(r.Headers)+1)
	hs = append(hs, r.Headers...)
	hs = append(hs, pipeline.Header{Key: "from", Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)})
	return pipeline.Message{Key: r.Key, Value: append([]byte("out:"), r.Value...), Headers: hs}, nil
}

// produceTo is a builder producing every record to topic with p.
func produceTo(p *franz.Producer, topic string) pipeline.Builder {
	return func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return franz.Produce(s, p, topic, toMsg)
	}
}
