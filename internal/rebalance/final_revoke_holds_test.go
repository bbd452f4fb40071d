package rebalance

import (
	"testing"
	"testing/synctest"
)

// A revoke while stopping whose commit is refused is not retried for the
// revoked partition: its next owner decides from then on. The final
// commit goes on with the partitions still owned.
func TestFinalCommitGoesOnAfterTheRevokeCommitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errRebalancing}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		c = h.nextCommit()
		wantOffsets(t, "final commit retried", c.offs, off(tp0, 9))
		c.ok()
		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}

// A partition revoked during the retry (the final offsets committed in
// the revoke), assigned again (closing: not owned again) and a kept one
// lost meanwhile: nothing more is sent, neither for the partition
// assigned again nor for the lost one.
func TestFinalCommitRevokedAssignedAgainThenLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() {
			h.core.Revoked([]TP{tp1})
			h.core.Assigned([]TP{tp1})
			h.core.Lost([]TP{tp0})
			h.core.Revoked([]TP{tp1})
		}
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.ok()

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after the partition revoked was assigned again and the kept one lost")
	})
}

// A final commit whose first attempt the broker accepted for some
// partitions and refused for others is retried with the partitions still
// owned; a revoke in between commits the final offsets again although
// the first attempt committed some of them, and leaves nothing to retry.
// Every commit of a partition carries the same final offset: none moves a
// partition back.
func TestFinalCommitPartlyRefusedThenRevokedNeverMovesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp0}) }
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{rejected: []Rejected{{Offset: off(tp1, 5), Err: errRebalancing}}}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-0", c.offs, off(tp0, 9), off(tp1, 5))
		c.ok()
		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}
