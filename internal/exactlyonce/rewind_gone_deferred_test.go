package exactlyonce

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// A rewind deferred by an abort inside Deliver finds p1's topic gone when
// it runs (Polled): p0 is rewound, p1 gets no graph and every record of
// it is dropped until the source loses it; the topic recreated, p1 is
// assigned again and its records, from the new topic's start, are
// processed and committed in the next transaction with p0's.
func TestDeferredRewindLeavesGonePartitionUntilLostThenReassigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn, d, stop := failInDeliverP1Gone(t)
		d.do(func(g *Group) {
			g.Polled()
			if err := g.Err(); err != nil {
				t.Fatalf("Err after the deferred rewind found p1's topic gone: %v, want nil", err)
			}
			if got := g.Resumable(); slices.Contains(got, tp(1)) {
				t.Errorf("Resumable %v lists in/1, which has no graph", got)
			}
			g.Deliver(tp(1), recs(1, 4, 6)) // fetched from the old topic: dropped
		})
		synctest.Wait()
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v (in/1 is not sought)", txn.rewound(), want)
		}
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v in the transaction, want none (in/1's records are dropped)", got)
		}
		txn.mu.Lock()
		delete(txn.gone, 1)
		txn.mu.Unlock()
		d.do(func(g *Group) {
			g.Lose([]sluice.TopicPartition{tp(1)})
			_ = g.Assign([]sluice.TopicPartition{tp(1)}) // the recreated topic's partition
			g.Deliver(tp(0), recs(0, 2, 6))
			g.Deliver(tp(1), recs(1, 0, 3))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 2, 1, 0, 3), offs(0, 2, 1, 2), offs(0, 6, 1, 3))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// A partition the rewind found gone is revoked (a rebalance) instead of
// lost while p0 has records in the open transaction: the revoke commits
// p0's offsets, none of p1, and Run goes on.
func TestGonePartitionRevokedCommitsTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn, d, stop := failInDeliverP1Gone(t)
		d.do(func(g *Group) {
			g.Polled()
			g.Deliver(tp(0), recs(0, 2, 6))
		})
		synctest.Wait()
		d.do(func(g *Group) {
			if offs := g.Revoke([]sluice.TopicPartition{tp(1)}); len(offs) != 0 {
				t.Errorf("Revoke returned %v, want nothing for the source to commit", offs)
			}
			if err := g.Err(); err != nil {
				t.Fatalf("Err after revoking the gone partition: %v, want nil", err)
			}
		})
		checkCommits(t, txn, offs(0, 2, 1, 2), offs(0, 6))
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
		visible, _, aborts, misplaced := txn.state()
		if want := sortedOutputs(0, 0, 6, 1, 0, 2); !slices.Equal(sorted(visible), want) {
			t.Fatalf("committed outputs %v, want each of %v once", sorted(visible), want)
		}
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// failInDeliverP1Gone is failInDeliver with a transaction whose Rewind
// reports p1's topic gone; it returns that transaction too.
func failInDeliverP1Gone(t *testing.T) (*stubTxn, *driver, func() error) {
	t.Helper()
	txn := &stubTxn{gone: map[int32]bool{1: true}}
	d, stop := failInDeliver(t, txn)
	return txn, d, stop
}
