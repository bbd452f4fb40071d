package exactlyonce

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// failInDeliver sets up the sequence of rebalance.Core.Add that lost or
// duplicated records after a rewind on librdkafka: p0 and p1 committed up
// to 2, delivered 2..3 each, an interval commit is due and waits for
// output 1-3-b; once it finished the commit will fail (txn.failNext).
// Then the source polls record 4 of p1 while the batch of p0 (4..5) is
// pending: Add flushes p0's batch first (this Deliver reaches the barrier,
// commits, fails, aborts and rewinds p0 and p1), then appends p1's record
// 4, fetched before the rewind, to its batch and delivers it. It returns
// the driver and the stop function after those two Deliver calls, run as
// Add runs them (on the poll loop, back to back).
func failInDeliver(t *testing.T, txn *stubTxn) (*driver, func() error) {
	t.Helper()
	gs := newGates("1-3-b")
	d, stop := startFanOut(t, txn, gs)
	d.fed(recs(0, 0, 2), recs(1, 0, 2))
	d.do(func(g *Group) {
		g.Offsets() // commits 0:2 1:2
		g.Deliver(tp(0), recs(0, 2, 4))
		g.Deliver(tp(1), recs(1, 2, 4))
	})
	synctest.Wait() // 1-3-b at its gate
	d.do(func(g *Group) { g.Offsets() })
	txn.mu.Lock()
	txn.failNext = errors.New("ILLEGAL_GENERATION")
	txn.mu.Unlock()
	gs.open("1-3-b")
	synctest.Wait()
	d.do(func(g *Group) {
		g.Deliver(tp(0), recs(0, 4, 6)) // the commit fails in here: abort, rewind
		g.Deliver(tp(1), recs(1, 4, 5)) // fetched before the rewind
		if err := g.Err(); err != nil {
			t.Fatalf("Err after the failed commit: %v, want nil (rewound in place)", err)
		}
	})
	synctest.Wait()
	return d, stop
}

// A record fetched before a rewind that happened inside Deliver (the
// Core's Add held it while it flushed the batch whose Deliver aborted)
// must not reach the partition's new graph: it would be processed a
// second time once the consumer, sought back to the committed offset,
// delivers it again.
func TestRecordHeldAcrossRewindInDeliverIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := failInDeliver(t, txn)
		d.do(func(g *Group) { g.Polled() })
		if want := [][]sluice.Offset{offs(0, 2, 1, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Fatalf("rewinds %v, want %v", txn.rewound(), want)
		}
		if got := txn.pendingOutputs(); len(got) != 0 {
			t.Fatalf("outputs %v in the transaction after the rewind, want none: records fetched before it must be dropped", got)
		}
		d.do(func(g *Group) { // what the consumer delivers after the seek
			g.Deliver(tp(0), recs(0, 2, 6))
			g.Deliver(tp(1), recs(1, 2, 6))
		})
		commitAndStop(t, d, stop)
		aborts, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 6), offs(0, 2, 1, 2), offs(0, 6, 1, 6))
		if aborts != 1 || len(misplaced) != 0 {
			t.Fatalf("aborts %d, outputs outside a transaction %v; want 1 and none", aborts, misplaced)
		}
	})
}

// The same record, when the partition is revoked right after the rewind
// (a cooperative rebalance following the ILLEGAL_GENERATION commit), must
// not make the revoke commit past it: the records between the committed
// offset and it were never processed again (they would be lost). The
// revoked partition is not sought; its next owner starts at the committed
// offset.
func TestRevokeAfterRewindInDeliverCommitsNothingUnprocessed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{}
		d, stop := failInDeliver(t, txn)
		d.do(func(g *Group) {
			g.Revoke([]sluice.TopicPartition{tp(1)}) // a rebalance callback in the same poll
			if err := g.Err(); err != nil {
				t.Fatalf("Err after the revoke: %v, want nil", err)
			}
			g.Polled()
		})
		d.do(func(g *Group) { g.Deliver(tp(0), recs(0, 2, 6)) })
		commitAndStop(t, d, stop)
		// Nothing past 2 for in/1.
		_, misplaced := checkCommitted(t, txn, sortedOutputs(0, 0, 6, 1, 0, 2), offs(0, 2, 1, 2), offs(0, 6))
		if len(misplaced) != 0 {
			t.Fatalf("outputs outside a transaction %v", misplaced)
		}
		if want := [][]sluice.Offset{offs(0, 2)}; !slices.EqualFunc(txn.rewound(), want, slices.Equal) {
			t.Errorf("rewinds %v, want %v (in/1 is leaving: not sought)", txn.rewound(), want)
		}
	})
}
