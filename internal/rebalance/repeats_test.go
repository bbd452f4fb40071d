package rebalance

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
)

// A record the client returns again right after itself (the same offset
// and timestamp as the newest added of its partition) is dropped, also
// across batches and after another partition's batch; a record at a
// lower offset is delivered (an offset reset moved the client back on
// purpose), and so is one at the same offset with another timestamp.
// After a rewind (DropHeld) or a new assignment, nothing is taken for a
// repeat.
func TestRecordsReturnedAgainAreDroppedWithinAnOwnership(t *testing.T) {
	g := newFakeGroup()
	g.logging = true
	c := newIdleCore(g)
	c.assign([]TP{tp0, tp1})
	at := time.Unix(1_700_000_000, 0)
	r := func(tp TP, o int64) sluice.Record { x := rec(tp, o); x.Timestamp = at.Add(time.Duration(o)); return x }
	add := func(recs ...sluice.Record) {
		for _, x := range recs {
			c.Add(x)
		}
		c.Flush()
	}
	add(r(tp0, 0), r(tp0, 1), r(tp0, 2))
	add(r(tp0, 2), r(tp0, 3)) // the newest once more, in the next batch
	add(r(tp0, 3), r(tp0, 4)) // and within one
	add(r(tp1, 0))            // another partition's batch in between
	add(r(tp0, 4), r(tp0, 5)) // the newest of tp0 once more after it
	reset := r(tp0, 5)
	reset.Timestamp = at.Add(time.Hour) // offset 5 reused with another record
	add(r(tp0, 1), r(tp0, 2), reset)    // an offset reset back to 1
	want := []int64{0, 1, 2, 3, 4, 5, 1, 2, 5}
	if got := g.got[tp0]; !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/0, want %v", got, want)
	}

	c.DropHeld([]TP{tp0}) // a rewind moved the client's position back to 5
	add(reset)
	if got, want := g.got[tp0], append(want, 5); !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/0 after a rewind to 5, want %v", got, want)
	}

	c.giveUp([]TP{tp1})
	c.assign([]TP{tp1}) // a new ownership starts at the group's commit
	add(r(tp1, 0), r(tp1, 1))
	if got, want := g.got[tp1], []int64{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v of in/1 across two ownerships, want %v", got, want)
	}
}
