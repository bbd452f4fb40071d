package rebalance

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

var tp2 = TP{Topic: "in", Partition: 2}

// An assignment starts graphs only for the partitions not owned yet: a
// cooperative rebalance may name an owned partition again, which keeps
// its graph and its pause.
func TestAssignedStartsOnlyPartitionsNotOwned(t *testing.T) {
	g := newFakeGroup()
	c := newIdleCore(g)
	c.Assigned([]TP{tp0})
	g.pauseNext = true
	c.Add(rec(tp0, 0))
	c.Flush() // tp0 is paused now
	c.Assigned([]TP{tp0, tp1})
	if got, want := fmt.Sprint(g.assigned), "[[{in 0}] [{in 1}]]"; got != want {
		t.Errorf("Group.Assign calls %s, want %s", got, want)
	}
	if !c.paused[tp0] {
		t.Error("in/0 is no longer paused after an assignment naming it again")
	}
	c.LoseAll() // closing: assignments only answer the client
	c.Assigned([]TP{tp2})
	if len(g.assigned) != 2 || c.Owns(tp2) {
		t.Errorf("an assignment while closing started %v (owns in/2: %v), want nothing", g.assigned[2:], c.Owns(tp2))
	}
}

// A revoke drains only the partitions of its set the core owns, hands
// those it had paused to the backend before the drain, then commits what
// the drain returned for them merged with their pending offsets, and
// nothing of the partitions it did not own.
func TestRevokedDrainsOwnedThenCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.g.mu.Lock()
		h.g.revoke = []sluice.Offset{off(tp0, 3), off(tp2, 8)} // in/2 is not owned: fenced
		h.g.pauseNext = true
		h.g.mu.Unlock()
		revokesBefore := -1
		h.b.gaveUpPaused = func(tps []TP) {
			h.g.mu.Lock()
			revokesBefore = len(h.g.revoked)
			h.g.mu.Unlock()
			if len(tps) != 1 || tps[0] != tp0 {
				t.Errorf("GaveUpPaused(%v), want [in/0]", tps)
			}
		}
		h.do(func() {
			h.core.Add(rec(tp0, 0))
			h.core.Flush() // pauses tp0
		})
		revoked := h.doAsync(func() { h.core.Revoked([]TP{tp0, tp2}) })
		c := h.nextCommit()
		wantOffsets(t, "revoke commit", c.offs, off(tp0, 3))
		c.ok()
		<-revoked
		h.g.mu.Lock()
		got := fmt.Sprint(h.g.revoked)
		h.g.mu.Unlock()
		if want := "[[{in 0}]]"; got != want {
			t.Errorf("Group.Revoke calls %s, want %s", got, want)
		}
		if revokesBefore != 0 {
			t.Errorf("GaveUpPaused ran after %d Group.Revoke calls, want before the drain", revokesBefore)
		}
		if h.core.Owns(tp0) || !h.core.Owns(tp1) {
			t.Errorf("owns in/0: %v, in/1: %v after revoking in/0; want false, true", h.core.Owns(tp0), h.core.Owns(tp1))
		}
		h.stopOK()
	})
}

// A loss cancels the graphs of the partitions it owned and commits
// nothing of theirs, not even offsets pending for them.
func TestLostCommitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.do(func() { h.core.collect([]sluice.Offset{off(tp0, 5)}) }) // pending, not sent yet
		h.do(func() { h.core.Lost([]TP{tp0, tp2}) })
		h.g.mu.Lock()
		lost, revoked := fmt.Sprint(h.g.lost), len(h.g.revoked)
		h.g.mu.Unlock()
		if want := "[[{in 0}]]"; lost != want || revoked != 0 {
			t.Errorf("Group.Lose calls %s and %d Revoke calls, want %s and none", lost, revoked, want)
		}
		c := h.commitOf(off(tp1, 2))
		wantOffsets(t, "interval commit after the loss", c.offs, off(tp1, 2))
		c.ok()
		h.stopOK()
	})
}

// A revoke or a loss served while shutting down drains nothing (the
// graphs are drained already): a lost partition only drops out of the
// final commit; a revoke commits every owned partition's final offset at
// once, which leaves the final commit nothing to send.
func TestRevokedOrLostWhileClosingDropsOutOfFinalCommit(t *testing.T) {
	for name, tc := range map[string]struct {
		serve    func(*Core, []TP)
		inRevoke bool
	}{
		"revoked": {func(c *Core, tps []TP) { c.Revoked(tps) }, true},
		"lost":    {(*Core).Lost, false},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t)
				h.assign(tp0, tp1)
				h.setFinal(off(tp0, 4), off(tp1, 6))
				h.b.beforeFinal = func() { tc.serve(h.core, []TP{tp0}) }
				h.cancel()
				if tc.inRevoke {
					c := h.nextCommit()
					wantOffsets(t, "commit in the revoke", c.offs, off(tp0, 4), off(tp1, 6))
					c.ok()
				} else {
					c := h.nextCommit()
					wantOffsets(t, "final commit", c.offs, off(tp1, 6))
					c.ok()
				}
				if err := <-h.done; err != nil {
					t.Fatal(err)
				}
				h.g.mu.Lock()
				defer h.g.mu.Unlock()
				if len(h.g.revoked) != 0 || len(h.g.lost) != 0 {
					t.Errorf("Group.Revoke calls %v, Lose calls %v while closing, want none", h.g.revoked, h.g.lost)
				}
			})
		})
	}
}
