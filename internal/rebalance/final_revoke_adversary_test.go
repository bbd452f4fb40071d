package rebalance

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The commit a revoke sends while stopping carries the final offsets of
// the partitions kept as well as the revoked ones, so a coordinator that
// never answers it holds back nothing that another commit could have
// carried: Run returns at the final commit's deadline (the commit's 40%
// of CloseTimeout) with an error naming the final offsets not committed,
// and sends nothing more.
func TestFinalCommitRevokeCommitUnansweredEndsAtTheDeadline(t *testing.T) {
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
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		began := time.Now()
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		slow := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", slow.offs, off(tp0, 9), off(tp1, 5))
		time.Sleep(time.Until(began.Add(4*time.Second - 10*time.Millisecond))) // fake time: answered 10ms before the deadline
		slow.ok()

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}
