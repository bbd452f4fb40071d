package exactlyonce

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// holder is a Layer as the follower's group is one: it hands on the
// records of a partition below its limit (0: no limit) and holds the rest,
// asking for a pause while it holds any; Resumable hands on what the
// limit lets go since.
type holder struct {
	sluice.Group
	limit   map[sluice.TopicPartition]int64
	held    map[sluice.TopicPartition][]sluice.Record
	rewinds [][]sluice.TopicPartition
}

var _ Layer = (*holder)(nil)

func newHolder(limit map[sluice.TopicPartition]int64) *holder {
	return &holder{limit: limit, held: map[sluice.TopicPartition][]sluice.Record{}}
}

func (h *holder) Inner() sluice.Group     { return h.Group }
func (h *holder) SetInner(g sluice.Group) { h.Group = g }

func (h *holder) Rewound(tps []sluice.TopicPartition) {
	h.rewinds = append(h.rewinds, slices.Clone(tps))
	for _, tp := range tps {
		delete(h.held, tp)
	}
}

func (h *holder) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	h.held[tp] = append(h.held[tp], recs...)
	return h.release(tp)
}

func (h *holder) Resumable() []sluice.TopicPartition {
	out := h.Group.Resumable()
	for tp := range h.held {
		h.release(tp)
	}
	return out
}

// release hands on tp's held records below its limit and reports whether
// any stay held.
func (h *holder) release(tp sluice.TopicPartition) bool {
	recs := h.held[tp]
	n := 0
	for n < len(recs) && (h.limit[tp] == 0 || recs[n].Offset < h.limit[tp]) {
		n++
	}
	if n > 0 {
		h.Group.Deliver(tp, recs[:n:n])
		h.held[tp] = recs[n:]
	}
	return len(h.held[tp]) > 0
}

// startHeld starts Run with a holder of limit above the Group (Insert puts
// the Group beneath it) and the fanOut graphs of txn and gs.
func startHeld(t *testing.T, txn *stubTxn, gs gates, limit map[sluice.TopicPartition]int64) (*driver, *holder, func() error) {
	t.Helper()
	h := newHolder(limit)
	d := newDriver(txn, Config{})
	d.wrap = func(g sluice.Group) sluice.Group { h.Group = g; return h }
	_, stop := run(t, d, fanOut(txn, gs))
	return d, h, stop
}

// Insert puts the Group beneath a Layer and returns the Layer to feed:
// the source's calls reach the Layer, the Layer's the Group, and the
// Group's the runtime.
func TestInsertGoesBeneathTheLayers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, h, stop := startHeld(t, &stubTxn{}, newGates(), nil)
		d.do(func(g *Group) {
			if d.outer != sluice.Group(h) {
				t.Errorf("Insert fed %T, want the layer", d.outer)
			}
			if h.Inner() != sluice.Group(g) {
				t.Errorf("the layer hands on to %T, want the Group", h.Inner())
			}
		})
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	})
}

// A Layer above the Group holds p0's records from offset 1: they are in
// no transaction, so an interval commit waits only for the records handed
// on and commits them (p0 at 1, p1 at 2) while the Layer holds the rest.
// Once the Layer lets them go they are processed in the next transaction,
// and every output commits once.
func TestCommitWaitsOnlyForRecordsALayerHandedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, h, stop := startHeld(t, txn, newGates(), map[sluice.TopicPartition]int64{tp(0): 1})
		d.do(func(*Group) {
			must(t, d.outer.Assign([]sluice.TopicPartition{tp(0), tp(1)}))
			if !d.outer.Deliver(tp(0), recs(0, 0, 3)) {
				t.Error("the layer holding records asked for no pause")
			}
			d.outer.Deliver(tp(1), recs(1, 0, 2))
		})
		synctest.Wait()
		d.do(func(*Group) { d.outer.Offsets() })
		checkCommits(t, txn, offs(0, 1, 1, 2))
		d.do(func(*Group) {
			h.limit[tp(0)] = 0
			d.outer.Resumable()
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 3, 1, 0, 2), offs(0, 1, 1, 2), offs(0, 3))
		if aborts != 0 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want none", aborts, misplaced)
		}
	})
}

// Records a Layer hands on while a commit is due (its barrier not reached:
// an output is held at its gate) are held by the Group, not added to the
// transaction being committed: the commit holds p0 up to 1 only, and the
// records the Layer let go after the commit was due commit in the next
// transaction.
func TestRecordsALayerHandsOnWhileACommitIsDueWaitForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		gs := newGates("0-0-b")
		d, h, stop := startHeld(t, txn, gs, map[sluice.TopicPartition]int64{tp(0): 1})
		d.do(func(*Group) {
			must(t, d.outer.Assign([]sluice.TopicPartition{tp(0)}))
			d.outer.Deliver(tp(0), recs(0, 0, 3))
		})
		synctest.Wait()
		d.do(func(*Group) {
			d.outer.Offsets() // due; 0-0-b is held at its gate
			h.limit[tp(0)] = 0
			d.outer.Resumable() // the layer hands on 1 and 2: the Group holds them
		})
		synctest.Wait()
		if got := txn.pendingOutputs(); !slices.Equal(sorted(got), []string{"0-0-a"}) {
			t.Fatalf("outputs in the open transaction %v, want [0-0-a]", got)
		}
		gs.open("0-0-b")
		synctest.Wait()
		d.do(func(*Group) { d.outer.Resumable() }) // the barrier is reached: commit
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 3), offs(0, 1), offs(0, 3))
		if aborts != 0 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want none", aborts, misplaced)
		}
	})
}

// A rewind tells the Layer: losing p1 with records in the transaction
// aborts it and rewinds p0, which had records in it; the Layer drops the
// records it holds of p0 (fetched before the seek) and is told of p0
// only. The records fetched again from the committed offset commit once.
func TestRewindTellsTheLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, h, stop := startHeld(t, txn, newGates(), map[sluice.TopicPartition]int64{tp(0): 2})
		d.do(func(*Group) {
			must(t, d.outer.Assign([]sluice.TopicPartition{tp(0), tp(1)}))
			d.outer.Deliver(tp(0), recs(0, 0, 4))
			d.outer.Deliver(tp(1), recs(1, 0, 2))
		})
		synctest.Wait()
		d.do(func(g *Group) {
			d.outer.Lose([]sluice.TopicPartition{tp(1)})
			if err := g.Err(); err != nil {
				t.Fatalf("Err after losing p1: %v, want nil (rewound in place)", err)
			}
		})
		if want := [][]sluice.TopicPartition{{tp(0)}}; !slices.EqualFunc(h.rewinds, want, slices.Equal) {
			t.Fatalf("the layer was told of rewinds %v, want %v", h.rewinds, want)
		}
		if n := len(h.held[tp(0)]); n != 0 {
			t.Fatalf("the layer holds %d records of p0 after its rewind, want 0", n)
		}
		d.do(func(*Group) {
			h.limit[tp(0)] = 0
			d.outer.Resumable()
			d.outer.Deliver(tp(0), recs(0, 0, 4)) // fetched again after the seek
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 4), offs(0, 4))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}
