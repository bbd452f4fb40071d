package rebalance

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// An eager revoke-all then re-assignment of the same partition while an
// interval commit of it is in flight and the core holds records of it
// (paused): the revoke waits for the commit in flight, which fails, then
// commits what the drain returned; the re-assigned partition starts
// fresh (nothing held, not paused), the failed commit of the earlier
// ownership is never retried (it would move the offset back), and the
// shutdown commits nothing of it.
func TestEagerRevokeThenReassignDuringCommitInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.g.logging = true
		h.assign(tp0)
		inflight := h.commitOf(off(tp0, 5))
		wantOffsets(t, "interval commit", inflight.offs, off(tp0, 5))
		h.do(func() {
			h.g.pauseNext = true
			h.core.Add(rec(tp0, 5))
			h.core.Flush() // paused
			h.core.Add(rec(tp0, 6))
			h.core.Flush() // held
		})
		h.g.mu.Lock()
		h.g.revoke = []sluice.Offset{off(tp0, 6)}
		h.g.mu.Unlock()
		revoked := h.doAsync(func() { h.core.Revoked([]TP{tp0}) })
		inflight.answer <- commitAnswer{err: errMovedOn}
		c := h.nextCommit()
		wantOffsets(t, "revoke commit", c.offs, off(tp0, 6))
		c.ok()
		<-revoked
		h.do(func() { h.core.Assigned([]TP{tp0}) })
		h.do(func() {
			if n, _ := h.core.Held(); n != 0 {
				t.Errorf("the core holds %d records after the re-assignment, want 0", n)
			}
			if h.core.paused[tp0] {
				t.Error("in/0 is paused after the re-assignment")
			}
			if len(h.core.pending) != 0 {
				t.Errorf("pending %v after the re-assignment, want none", h.core.pending)
			}
		})
		h.g.mu.Lock()
		got := h.g.got[tp0]
		h.g.mu.Unlock()
		if len(got) != 1 || got[0] != 5 {
			t.Errorf("delivered %v of in/0, want [5] (6 was held, then dropped)", got)
		}
		h.noCommit("after the re-assignment")
		h.stopOK()
		h.noCommit("shutdown")
		h.bg.Wait()
	})
}
