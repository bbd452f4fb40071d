package rebalance

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// stopRevoking starts a shutdown of a member that owns in-0 and in-1 with
// the final offsets in/0@9 and in/1@5; serve runs whenever the final
// commit waits to be retried (the client's rebalance callbacks). The
// first attempt of the final commit is checked and answered first.
func (h *harness) stopRevoking(serve func(), first commitAnswer) <-chan error {
	h.t.Helper()
	h.assign(tp0, tp1)
	h.setFinal(off(tp0, 9), off(tp1, 5))
	h.b.waitToRetry = serve
	stopped := h.stopAsync()
	c := h.nextCommit()
	wantOffsets(h.t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
	c.answer <- first
	return stopped
}

// stoppedOK checks that Run returned nil and sent nothing more.
func (h *harness) stoppedOK(stopped <-chan error) {
	h.t.Helper()
	if err := <-stopped; err != nil {
		h.t.Fatalf("Run = %v, want nil", err)
	}
	h.noCommit("after Run returned")
}

// A partition revoked while the final commit is retried is still this
// member's while the revoke is served: the final offsets of every
// partition still owned, the revoked one included, are committed there
// and then in one commit (as any revoke commits what its drain
// finished), and the final commit has nothing left to send. The revoked
// partition's next owner starts where this member stopped, instead of
// redoing its records.
func TestFinalCommitOfAPartitionRevokedDuringTheRetryIsSentInTheRevoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errMovedOn})
		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.ok()
		h.stoppedOK(stopped)
	})
}

// A revoke while stopping whose commit is refused is not retried for the
// revoked partition: its next owner decides from then on. The final
// commit goes on with the partitions still owned.
func TestFinalCommitGoesOnAfterTheRevokeCommitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errRebalancing})
		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}
		c = h.nextCommit()
		wantOffsets(t, "final commit retried", c.offs, off(tp0, 9))
		c.ok()
		h.stoppedOK(stopped)
	})
}

// A partition revoked during the retry (the final offsets committed in
// the revoke), assigned again (closing: not owned again) and a kept one
// lost meanwhile: nothing more is sent, neither for the partition
// assigned again nor for the lost one.
func TestFinalCommitRevokedAssignedAgainThenLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() {
			h.core.Revoked([]TP{tp1})
			h.core.Assigned([]TP{tp1})
			h.core.Lost([]TP{tp0})
			h.core.Revoked([]TP{tp1})
		}, commitAnswer{err: errMovedOn})
		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.ok()
		h.stoppedOK(stopped)
	})
}

// A final commit whose first attempt the broker accepted for some
// partitions and refused for others; a revoke in between commits the
// final offsets again and leaves nothing to retry. Every commit of a
// partition carries the same final offset: none moves a partition back.
func TestFinalCommitPartlyRefusedThenRevokedNeverMovesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp0}) },
			commitAnswer{rejected: []Rejected{{Offset: off(tp1, 5), Err: errRebalancing}}})
		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-0", c.offs, off(tp0, 9), off(tp1, 5))
		c.ok()
		h.stoppedOK(stopped)
	})
}

// The commit a revoke sends while stopping carries the final offsets of
// the partitions kept as well as the revoked ones, so a coordinator that
// never answers it holds back nothing that another commit could have
// carried: Run returns at the final commit's deadline (the commit's 40%
// of CloseTimeout) with an error naming the final offsets not committed,
// and sends nothing more.
func TestFinalCommitRevokeCommitUnansweredEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		began := time.Now()
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errMovedOn})
		hung := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", hung.offs, off(tp0, 9), off(tp1, 5))
		defer func() { hung.answer <- commitAnswer{err: errMovedOn} }() // answered after Run returned

		err := <-stopped
		if took := time.Since(began); took != 4*time.Second {
			t.Errorf("Run returned after %v, want the final commit's deadline, 4s", took)
		}
		if err == nil || !strings.Contains(err.Error(), "the final commit of [in/0@9]") {
			t.Errorf("Run = %v, want an error naming the final commit of in/0@9, which did not finish", err)
		}
		h.noCommit("after Run returned")
	})
}

// A revoke commit answered just before the final commit's deadline
// committed everything: Run returns nil without another commit.
func TestFinalCommitSlowRevokeCommitLeavesNothingToSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		began := time.Now()
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errMovedOn})
		slow := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", slow.offs, off(tp0, 9), off(tp1, 5))
		time.Sleep(time.Until(began.Add(4*time.Second - 10*time.Millisecond))) // fake time: answered 10ms before the deadline
		slow.ok()
		h.stoppedOK(stopped)
	})
}

// A revoke the client reported during the drain (served before the
// final commit's first attempt) commits the final offsets in the revoke;
// when the revoke's commit is refused, the final commit goes on with the
// partitions kept.
func TestFinalCommitOfAPartitionRevokedDuringTheDrainIsSentInTheRevoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		served := false
		h.b.beforeFinal = func() {
			if !served {
				served = true
				h.core.Revoked([]TP{tp0})
			}
		}
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-0", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errRebalancing}

		c = h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp1, 5))
		c.ok()
		h.stoppedOK(stopped)
	})
}

// A revoke while stopping commits nothing the runtime did not finish: a
// partition without a final offset (nothing of it finished since the last
// commit) sends no commit, and one revoked twice commits once.
func TestFinalCommitRevokeWhileStoppingCommitsOnlyFinalOffsetsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9))
		rounds := 0
		h.b.beforeFinal = func() {
			rounds++
			if rounds == 1 {
				h.core.Revoked([]TP{tp1}) // nothing final of tp1: no commit
				h.core.Revoked([]TP{tp0})
				h.core.Revoked([]TP{tp0}) // revoked already: no second commit
			}
		}
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-0", c.offs, off(tp0, 9))
		c.ok()
		h.stoppedOK(stopped)
	})
}
