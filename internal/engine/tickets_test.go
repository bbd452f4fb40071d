package engine

import (
	"testing"
)

// newTestTracker returns a tracker holding n records (offsets 0 to n-1),
// and the ticket of the first.
func newTestTracker(n int) (*tracker, Ticket) {
	tr := newTracker(&segmentPool{}, func(int, int64) {})
	recs := make([]Record, n)
	for i := range recs {
		recs[i].Offset = int64(i)
	}
	return tr, ticketAt(tr.add(recs))
}

// A joined ticket completed twice is freed once: the second completion
// is a fault and releases nothing, its entry is free once, and the next
// two joins get two entries; a stale ticket of a reused entry is refused.
func TestTrackerFreesAJoinOnce(t *testing.T) {
	tr, first := newTestTracker(4)
	at := func(i uint64) Ticket { return Ticket{id: first.id + i} }
	a, f := tr.join([]Ticket{at(0), at(1)})
	if f != nil {
		t.Fatalf("join of live tickets: fault %v", f.kind)
	}
	if f := tr.done(a); f != nil {
		t.Fatalf("first completion: fault %v", f.kind)
	}
	if f := tr.done(a); f == nil || f.kind != faultCompleted || f.offset != -1 {
		t.Fatalf("second completion: fault %+v, want faultCompleted at offset -1", f)
	}
	if len(tr.free) != 1 {
		t.Fatalf("free join entries after a double completion: %v, want one", tr.free)
	}
	b, _ := tr.join([]Ticket{at(2)})
	c, _ := tr.join([]Ticket{at(3)})
	if b.joinIndex() == c.joinIndex() {
		t.Fatalf("two live joins share entry %d", b.joinIndex())
	}
	if b.joinIndex() != a.joinIndex() || b == a {
		t.Fatalf("reused entry: ticket %x after %x, want the same entry under a new generation", b.id, a.id)
	}
	tr.mu.Lock()
	held := tr.heldLocked(a)
	tr.mu.Unlock()
	if held {
		t.Fatal("the completed ticket of a reused entry still counts as held")
	}
	tr.done(a) // refused: b keeps its reference
	tr.mu.Lock()
	refs := tr.joins[b.joinIndex()].refs
	tr.mu.Unlock()
	if refs != 1 {
		t.Fatalf("a stale ticket's completion left its entry's new join with %d references, want 1", refs)
	}
	if got := tr.committable(); got != 2 {
		t.Fatalf("committable %d, want 2: nothing advances after the fault", got)
	}
}

// Every operation on a ticket with no reference left is a fault, reported
// once, after which nothing more is committable.
func TestTrackerTicketFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		misuse func(tr *tracker, t0 Ticket) *ticketFault
		kind   faultKind
		offset int64
	}{
		{"done twice, record gone", func(tr *tracker, t0 Ticket) *ticketFault {
			tr.done(t0)
			return tr.done(t0)
		}, faultCompleted, -1},
		{"done twice, record held", func(tr *tracker, t0 Ticket) *ticketFault {
			t1 := Ticket{id: t0.id + 1}
			tr.done(t1) // offset 0 unfinished: offset 1 stays
			return tr.done(t1)
		}, faultCompleted, 1},
		{"passed on after done, record gone", func(tr *tracker, t0 Ticket) *ticketFault {
			tr.done(t0)
			return unheld(tr, []Item[int]{{Ticket: Ticket{id: t0.id + 1}}, {Ticket: t0}})
		}, faultPassedOn, -1},
		{"passed on after done, record held", func(tr *tracker, t0 Ticket) *ticketFault {
			t1 := Ticket{id: t0.id + 1}
			tr.done(t1)
			return unheld(tr, []Item[int]{{Ticket: t0}, {Ticket: t1}})
		}, faultPassedOn, 1},
		{"retain after done", func(tr *tracker, t0 Ticket) *ticketFault {
			tr.done(t0)
			return tr.retain(t0, 1)
		}, faultRetained, -1},
		{"join after done", func(tr *tracker, t0 Ticket) *ticketFault {
			t1 := Ticket{id: t0.id + 1}
			tr.done(t1)
			_, f := tr.join([]Ticket{t0, t1})
			return f
		}, faultJoined, 1},
		{"split after done", func(tr *tracker, t0 Ticket) *ticketFault {
			j, _ := tr.join([]Ticket{t0})
			tr.done(j)
			ts, f := tr.split(j, 1)
			if ts != nil {
				return nil
			}
			return f
		}, faultSplit, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, t0 := newTestTracker(3)
			f := tc.misuse(tr, t0)
			if f == nil || f.kind != tc.kind || f.offset != tc.offset {
				t.Fatalf("fault %+v, want kind %v at offset %d", f, tc.kind, tc.offset)
			}
			before := tr.committable()
			for i := range uint64(3) {
				if f := tr.done(Ticket{id: t0.id + i}); f != nil {
					t.Fatalf("a fault reported twice: %+v", f)
				}
			}
			if got := tr.committable(); got != before {
				t.Fatalf("committable moved from %d to %d after the fault", before, got)
			}
		})
	}
}

// BenchmarkTrackerChunk is the tracker's work per record (one op) for
// chunks of 256 records through a graph of one stage, on one goroutine:
// add, feed, then complete the chunk. Check adds the check of the chunk
// the stage passes on (Outlet.Send); OutOfOrder checks it while a record
// completed ahead of an earlier one, so that the check reads every slot.
func BenchmarkTrackerChunk(b *testing.B) {
	for _, bc := range []struct {
		name              string
		check, outOfOrder bool
	}{{"NoCheck", false, false}, {"Check", true, false}, {"CheckOutOfOrder", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			const chunk = 256
			tr := newTracker(&segmentPool{}, func(int, int64) {})
			recs := make([]Record, chunk)
			buf := make([]Item[Record], 0, chunk)
			ts := make([]Ticket, chunk)
			for i := 0; i < b.N; i += chunk {
				buf = addAndFeed(tr, recs, buf, ts)
				if bc.outOfOrder {
					tr.done(ts[chunk-1]) // the chunk's first record is still held
					buf = buf[:chunk-1]
				}
				if bc.check && unheld(tr, buf) != nil {
					b.Fatal("a held chunk was refused")
				}
				tr.done(ts[:len(buf)]...)
			}
		})
	}
}
