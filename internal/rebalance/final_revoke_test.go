package rebalance

import (
	"testing"
	"testing/synctest"
)

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
		h.assign(tp0, tp1)
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.b.waitToRetry = func() { h.core.Revoked([]TP{tp1}) }
		stopped := h.stopAsync()

		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{err: errMovedOn}

		c = h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", c.offs, off(tp0, 9), off(tp1, 5))
		c.answer <- commitAnswer{}

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
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
		c.answer <- commitAnswer{}

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
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
		c.answer <- commitAnswer{}

		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		h.noCommit("after Run returned")
	})
}
