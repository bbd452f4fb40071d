package rebalance

import (
	"slices"
	"testing"
)

// A record the client returns again within one ownership (its offset is
// not after the newest added) is dropped, also across batches; after a
// rewind (DropHeld) or a new assignment, lower offsets are delivered
// again.
func TestRecordsReturnedAgainAreDroppedWithinAnOwnership(t *testing.T) {
	g := newFakeGroup()
	g.logging = true
	c := newIdleCore(g)
	c.assign([]TP{tp0, tp1})
	add := func(tp TP, offs ...int64) {
		for _, o := range offs {
			c.Add(rec(tp, o))
		}
		c.Flush()
	}
	add(tp0, 0, 1, 2)
	add(tp0, 2, 3)    // the last record once more, in the next batch
	add(tp0, 3, 3, 4) // and within one
	add(tp1, 0)
	add(tp0, 1, 5) // an older one after another partition's batch
	if got, want := g.got[tp0], []int64{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/0, want %v", got, want)
	}

	c.DropHeld([]TP{tp0}) // a rewind moved the client's position back to 2
	add(tp0, 2, 3)
	if got, want := g.got[tp0], []int64{0, 1, 2, 3, 4, 5, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/0 after a rewind to 2, want %v", got, want)
	}

	c.giveUp([]TP{tp1})
	c.assign([]TP{tp1}) // a new ownership starts at the group's commit
	add(tp1, 0, 1)
	if got, want := g.got[tp1], []int64{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/1 across two ownerships, want %v", got, want)
	}
}
