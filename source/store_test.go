package source

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/testkit"
)

// waitCommitted polls the broker until group's committed offsets of topic
// equal want, failing after within.
func waitCommitted(t *testing.T, b *testkit.Broker, group, topic string, want map[int32]int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := b.Committed(t, group, topic)
		if len(got) == len(want) {
			same := true
			for p, o := range want {
				same = same && got[p] == o
			}
			if same {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %v after %v, want %v", got, within, want)
		}
		<-tick.C
	}
}

// Group.Offsets reports a partition's offset once, when it moves. A store
// that failed (the whole call, or one partition) used to be lost until the
// offset moved again, so an idle partition's progress reached the broker
// only at the next revoke or shutdown. It is retried every interval.
func TestFailedStoreRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(kos []kafka.TopicPartition) ([]kafka.TopicPartition, error)
	}{
		{"call", func([]kafka.TopicPartition) ([]kafka.TopicPartition, error) {
			return nil, kafka.NewError(kafka.ErrState, "injected", false)
		}},
		{"partition", func(kos []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
			out := append([]kafka.TopicPartition(nil), kos...)
			for i := range out {
				out[i].Error = errors.New("injected")
			}
			return out, kafka.NewError(kafka.ErrState, "injected", false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := testkit.NewBroker(t)
			b.CreateTopic(t, "in", 1)
			b.Produce(t, "in", records(1, 0, 100)...)
			src := newSource(t, b, "g", "in", nil)
			var failures atomic.Int64
			src.storeOffsets = func(c *kafka.Consumer, kos []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
				if failures.Add(1) <= 3 {
					return tc.fail(kos)
				}
				return c.StoreOffsets(kos)
			}
			g, r := runFor(t, src, 100)
			// No record arrives after the first 100: Offsets reports 100
			// once; the interval commit must still get it to the broker
			// while the source runs.
			waitCommitted(t, b, "g", "in", map[int32]int64{0: 100}, 10*time.Second)
			if n := failures.Load(); n < 4 {
				t.Errorf("%d stores, want the 3 failures and a retry", n)
			}
			if err := r.stop(t); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, b.HighWatermarks(t, "in"), g)
		})
	}
}
