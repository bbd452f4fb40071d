package testkit

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// WaitCommitted calls committed every 10 ms until it returns want exactly:
// the same partitions at the same offsets. committed reads a group's
// commits of one topic from wherever the source commits (a broker, say);
// an error counts as not there yet (a node of the cluster may be down).
// It fails the test at once when a partition is committed past its wanted
// offset or a partition absent from want is committed (commits move
// forward, so want could not be reached), when Run returns first (want is
// checked once more then), and after WaitTimeout.
func (r *Running) WaitCommitted(t testing.TB, committed func() (map[int32]int64, error), want map[int32]int64) {
	t.Helper()
	var got map[int32]int64
	r.WaitUntil(t, fmt.Sprintf("commits to be %v", want), func() bool {
		c, err := committed()
		if err != nil {
			return false
		}
		got = c
		for _, p := range slices.Sorted(maps.Keys(got)) {
			if w, ok := want[p]; !ok || got[p] > w {
				t.Fatalf("testkit: committed %v, want %v: partition %d went past it", got, want, p)
			}
		}
		return maps.Equal(got, want)
	})
}
