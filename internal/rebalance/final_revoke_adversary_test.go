package rebalance

import (
	"testing"
	"testing/synctest"
	"time"
)

// A revoke served while the final commit waits to be retried commits the
// revoked partitions' final offsets, bounded by the final commit's whole
// deadline. When that commit hangs, it must not keep the final commit of
// the partitions this member still owns from being sent: before a revoke
// while stopping committed anything, in-0's final offset was committed
// here and Run returned nil.
func TestFinalCommitOfKeptPartitionsIsSentWhileTheRevokeCommitHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		began := time.Now()
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		hung := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", hung.offs, off(tp1, 5))
		// The coordinator does not answer the revoke's commit (yet).
		defer func() { hung.answer <- commitAnswer{err: errMovedOn} }()

		select {
		case c := <-h.b.commits:
			wantOffsets(t, "final commit retried", c.offs, off(tp0, 9))
			c.ok()
			if err := <-stopped; err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case err := <-stopped:
			t.Errorf("Run returned after %v without sending the final commit of in-0 (still owned); it returned: %v",
				time.Since(began), err)
		}
	})
}

// The revoke's commit may take most of the final commit's share of
// CloseTimeout and still succeed; the final commit of the partitions kept
// is then sent with what is left of the deadline (here 10ms, less than
// one round trip) and abandoned: Run reports it unfinished and it is
// answered after Run returned. Before a revoke while stopping committed
// anything, that commit had its whole share (4s).
func TestFinalCommitOfKeptPartitionsKeepsItsTimeAfterASlowRevokeCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		began := time.Now()
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		slow := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", slow.offs, off(tp1, 5))
		// Answered 10ms before the final commit's deadline (4s from Stop).
		time.Sleep(time.Until(began.Add(4*time.Second - 10*time.Millisecond)))
		slow.ok()

		c = h.nextCommit()
		wantOffsets(t, "final commit retried", c.offs, off(tp0, 9))
		const roundTrip = 50 * time.Millisecond
		time.Sleep(roundTrip)
		c.ok()
		if err := <-stopped; err != nil {
			t.Errorf("Run = %v, want nil: the final commit of in-0 was sent %v after Stop, with %v of its deadline left",
				err, 4*time.Second-10*time.Millisecond, 10*time.Millisecond)
		}
	})
}
