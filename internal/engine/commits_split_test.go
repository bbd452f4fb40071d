package engine

import (
	"slices"
	"testing"
)

// Split hands one reference of a joined ticket back as one reference to
// each member: members then complete one by one, and a second holder of
// the joined ticket still holds every member.
func TestTrackerSplitHandsAJoinBackAsItsMembers(t *testing.T) {
	tr := newTracker(&segmentPool{}, func(int, int64) {})
	first := tr.add([]Record{{Offset: 10}, {Offset: 11}, {Offset: 12}})
	ts := []Ticket{ticketAt(first), ticketAt(first + 1), ticketAt(first + 2)}
	j, _ := tr.join(slices.Clone(ts))
	tr.retain(j, 1) // a second holder, as after a FlatMap

	if got, _ := tr.split(ticketAt(first), 1); got != nil {
		t.Fatalf("split of a record ticket returned %v, want nil", got)
	}
	if got, _ := tr.split(j, 2); got != nil {
		t.Fatalf("split of a join of 3 as 2 returned %v, want nil", got)
	}
	got, _ := tr.split(j, 3)
	if !slices.Equal(got, ts) {
		t.Fatalf("split returned %v, want the members %v in order", got, ts)
	}
	tr.done(got[1])
	tr.done(got[0])
	if c := tr.committable(); c != -1 {
		t.Fatalf("committable %d while the second holder of the join holds every member, want -1", c)
	}
	tr.done(j)
	if c := tr.committable(); c != 12 {
		t.Fatalf("committable %d, want 12 (offsets 10 and 11 done, 12 still held by its split ticket)", c)
	}
	tr.done(got[2])
	if c := tr.committable(); c != 13 {
		t.Fatalf("committable %d, want 13", c)
	}
}
