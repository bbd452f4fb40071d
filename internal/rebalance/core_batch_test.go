package rebalance

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
)

// newIdleCore returns a core over a fake backend and group whose loop
// never runs: the test is its poll goroutine.
func newIdleCore(g *fakeGroup) *Core {
	return New(&fakeBackend{}, g, Options{Settings: Settings{Prefix: "test", GroupConfig: sluice.GroupConfig{CommitInterval: time.Second}}})
}

// Add and Flush reuse one batch array: delivering batches costs no
// allocation (Deliver does not keep the slice it is handed).
func TestAddAndFlushAllocateNothing(t *testing.T) {
	g := newFakeGroup()
	c := newIdleCore(g)
	c.assign([]TP{tp0, tp1})
	recs := make([]sluice.Record, 3*MaxBatch)
	for i := range recs {
		recs[i] = rec(tp0, int64(i))
	}
	other := rec(tp1, 0)
	var next int64 // each run's records follow the last run's
	allocs := testing.AllocsPerRun(10, func() {
		for i := range recs {
			recs[i].Offset = next
			next++
			c.Add(recs[i])
		}
		other.Offset = next
		c.Add(other) // another partition: delivers the batch of tp0
		c.Flush()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per %d records added and flushed, want 0", allocs, len(recs)+1)
	}
	if got, want := g.delivered[tp0], 11*len(recs); got != want { // AllocsPerRun runs once more to warm up
		t.Errorf("delivered %d records of in/0, want %d", got, want)
	}
}

// A partition given up while its batch is being built delivers nothing:
// Flush fences the batch even though Add looked the owned set up only at
// its first record.
func TestFlushFencesAPartitionGivenUpMidBatch(t *testing.T) {
	g := newFakeGroup()
	c := newIdleCore(g)
	c.assign([]TP{tp0})
	c.Add(rec(tp0, 0))
	c.giveUp([]TP{tp0})
	c.Add(rec(tp0, 1))
	c.Flush()
	c.assign([]TP{tp0})
	c.Add(rec(tp0, 2))
	c.Flush()
	if got := g.delivered[tp0]; got != 1 {
		t.Errorf("delivered %d records of in/0, want 1 (offset 2, after the new assignment)", got)
	}
}
