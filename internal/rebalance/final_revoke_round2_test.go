package rebalance

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A partition lost and another revoked in the same wait for the final
// commit's retry: the revoke's commit carries the final offsets of the
// partitions still owned only, never the lost one's (another member may
// own it already).
func TestFinalCommitRevokeAfterALossLeavesTheLostPartitionOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1, tp2)
		h.setFinal(off(tp0, 9), off(tp1, 5), off(tp2, 7))
		h.b.waitToRetry = func() {
			h.core.Lost([]TP{tp0})
			h.core.Revoked([]TP{tp1})
		}
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5), off(tp2, 7))
		c.answer <- commitAnswer{err: errRebalancing}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp1, 5), off(tp2, 7))
		c.ok()

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}

// The revoke's commit answered with the revoked partition refused and the
// kept one committed: the retry sends the kept partition again at the
// same offset only (never another one), and Run returns nil.
func TestFinalCommitRevokeCommitPartlyRefusedRetriesTheKeptAtTheSameOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		stopped := h.stopAsync()

		c := h.nextCommit()
		c.answer <- commitAnswer{err: errRebalancing}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{rejected: []Rejected{{Offset: off(tp1, 5), Err: errMovedOn}}}

		c = h.nextCommit()
		wantOffsets(t, "final commit's retry", c.offs, off(tp0, 9))
		c.ok()

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}

// An interval commit still in flight when Stop begins and never answered:
// a revoke served before the final commit's first attempt sends nothing
// (one commit at a time), and Run returns at the final commit's deadline
// (4s) with an error naming the unsent final commit; nothing is sent
// after Run returned, even once the interval commit is answered.
func TestFinalCommitRevokeBehindAnUnansweredIntervalCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		interval := h.commitOf(off(tp0, 3), off(tp1, 2))
		h.setFinal(off(tp0, 9), off(tp1, 5))
		served := false
		h.b.beforeFinal = func() {
			if !served {
				served = true
				h.core.Revoked([]TP{tp1})
			}
		}
		began := time.Now()
		stopped := h.stopAsync()

		err := <-stopped
		if took := time.Since(began); took != 4*time.Second {
			t.Errorf("Run returned after %v, want the final commit's deadline, 4s", took)
		}
		if err == nil || !strings.Contains(err.Error(), "did not finish within Config.CloseTimeout") {
			t.Errorf("Run = %v, want an error naming the final commit that did not finish", err)
		}
		h.noCommit("while the interval commit is unanswered")
		interval.answer <- commitAnswer{err: errors.New("late")}
		synctest.Wait()
		h.noCommit("after Run returned")
	})
}

// An eager revoke names the whole assignment: when it comes while the
// final commit is retried, the revoke's commit carries every final offset
// and nothing is kept. That commit never answered ends the shutdown at
// the final commit's deadline like an unanswered final commit: Run
// returns an error naming the final offsets not committed (as it does
// when a partition is kept, TestFinalCommitRevokeCommitUnansweredEndsAtTheDeadline),
// not nil.
func TestFinalCommitEagerRevokeCommitUnansweredIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp0, tp1}) }
		began := time.Now()
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errRebalancing}

		hung := h.nextCommit()
		wantOffsets(t, "commit in the revoke of every partition", hung.offs, off(tp0, 9), off(tp1, 5))
		defer func() { hung.answer <- commitAnswer{err: errMovedOn} }() // answered after Run returned

		err := <-stopped
		if took := time.Since(began); took != 4*time.Second {
			t.Errorf("Run returned after %v, want the final commit's deadline, 4s", took)
		}
		if err == nil || !strings.Contains(err.Error(), "did not finish within Config.CloseTimeout") {
			t.Errorf("Run = %v, want an error naming the final commit of in/0@9 and in/1@5, which did not finish within Config.CloseTimeout", err)
		}
		h.noCommit("after Run returned")
	})
}

// The same eager revoke's commit failing with an error that is no
// refusal of the group (the coordinator unreachable): the final offsets
// of every partition failed to commit, and Run returns the error naming
// the failed final commit, as the final commit's own attempt does, not
// nil.
func TestFinalCommitEagerRevokeCommitFailedIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp0, tp1}) }
		stopped := h.stopAsync()

		c := h.nextCommit()
		c.answer <- commitAnswer{err: errRebalancing}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of every partition", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errors.New("COORDINATOR_NOT_AVAILABLE")}

		err := <-stopped
		if err == nil || !strings.Contains(err.Error(), "COORDINATOR_NOT_AVAILABLE") {
			t.Errorf("Run = %v, want an error naming the final commit of in/0@9 and in/1@5, which failed with COORDINATOR_NOT_AVAILABLE", err)
		}
		h.noCommit("after Run returned")
	})
}

// An eager revoke before the final commit's first attempt, behind an
// interval commit never answered: the revoke's commit of every final
// offset cannot be sent by the final commit's deadline, and Run returns
// the error naming the final commit that did not finish, not nil.
func TestFinalCommitEagerRevokeBehindAnUnansweredIntervalCommitIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		interval := h.commitOf(off(tp0, 3), off(tp1, 2))
		h.setFinal(off(tp0, 9), off(tp1, 5))
		served := false
		h.b.beforeFinal = func() {
			if !served {
				served = true
				h.core.Revoked([]TP{tp0, tp1})
			}
		}
		began := time.Now()
		stopped := h.stopAsync()

		err := <-stopped
		if took := time.Since(began); took != 4*time.Second {
			t.Errorf("Run returned after %v, want the final commit's deadline, 4s", took)
		}
		if err == nil || !strings.Contains(err.Error(), "did not finish within Config.CloseTimeout") {
			t.Errorf("Run = %v, want an error naming the final commit that was not sent in time", err)
		}
		h.noCommit("while the interval commit is unanswered")
		interval.answer <- commitAnswer{err: errors.New("late")}
		synctest.Wait()
		h.noCommit("after Run returned")
	})
}
