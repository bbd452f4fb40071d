package kafkatest

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// WaitCommittedTimeout is how long [Broker.WaitCommitted] waits before it
// fails the test.
const WaitCommittedTimeout = time.Minute

// WaitCommitted polls group's committed offsets of topic every 10 ms until
// they equal want exactly: the same partitions at the same offsets. It
// fails the test at once when a partition is committed past its wanted
// offset or a partition absent from want is committed (commits move
// forward, so want could not be reached), and after WaitCommittedTimeout
// otherwise.
func (b *Broker) WaitCommitted(t testing.TB, group, topic string, want map[int32]int64) {
	t.Helper()
	deadline := time.NewTimer(WaitCommittedTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := b.Committed(t, group, topic)
		if maps.Equal(got, want) {
			return
		}
		for _, p := range slices.Sorted(maps.Keys(got)) {
			if w, ok := want[p]; !ok || got[p] > w {
				t.Fatalf("kafkatest: group %q committed %v on %q, want %v: partition %d went past it", group, got, topic, want, p)
			}
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("kafkatest: group %q committed %v on %q after %v, want %v", group, got, topic, WaitCommittedTimeout, want)
		}
	}
}
