package rebalance

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
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
	h.answerCommits(commitStep{"final commit", finals, first})
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

// revokeBeforeFirstFinal makes the client report a revoke of tps during
// the drain, once: served before the final commit's first attempt.
func (h *harness) revokeBeforeFirstFinal(tps ...TP) {
	served := false
	h.b.beforeFinal = func() {
		if !served {
			served = true
			h.core.Revoked(tps)
		}
	}
}

// stoppedAtTheDeadline checks that Run, stopped at began, returned at the
// final commit's deadline (4s) with an error containing want; wantDesc
// says what that error should name.
func (h *harness) stoppedAtTheDeadline(stopped <-chan error, began time.Time, want, wantDesc string) {
	h.t.Helper()
	err := <-stopped
	if took := time.Since(began); took != 4*time.Second {
		h.t.Errorf("Run returned after %v, want the final commit's deadline, 4s", took)
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		h.t.Errorf("Run = %v, want %s", err, wantDesc)
	}
}

// noCommitBehind checks that nothing is sent while the interval commit
// is unanswered, nor once it is answered after Run returned.
func (h *harness) noCommitBehind(interval *commitCall) {
	h.t.Helper()
	h.noCommit("while the interval commit is unanswered")
	interval.answer <- commitAnswer{err: errors.New("late")}
	synctest.Wait()
	h.noCommit("after Run returned")
}

// commitStep is one commit expected while stopping: desc names it, want
// is what it must carry, answer is what the client answers it.
type commitStep struct {
	desc   string
	want   []sluice.Offset
	answer commitAnswer
}

// finals are the final offsets stopRevoking sets: in/0@9 and in/1@5.
var finals = []sluice.Offset{off(tp0, 9), off(tp1, 5)}

// accepted answers a commit as committed in full.
var accepted = commitAnswer{}

// answerCommits checks the next commits against steps, in order, and
// answers each with its step's answer.
func (h *harness) answerCommits(steps ...commitStep) {
	h.t.Helper()
	for _, s := range steps {
		c := h.nextCommit()
		wantOffsets(h.t, s.desc, c.offs, s.want...)
		c.answer <- s.answer
	}
}

// revokedWhileRetrying stops a member through stopRevoking with serve run
// while the final commit waits to be retried, checks and answers the
// commits in steps, and checks that Run then returned nil.
func revokedWhileRetrying(t *testing.T, serve func(h *harness), first commitAnswer, steps ...commitStep) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { serve(h) }, first)
		h.answerCommits(steps...)
		h.stoppedOK(stopped)
	})
}

// revoking is a serve for revokedWhileRetrying that revokes tps.
func revoking(tps ...TP) func(h *harness) {
	return func(h *harness) { h.core.Revoked(tps) }
}

// revokeCommitNeverAnswered stops a member through stopRevoking, revoking
// tps while the final commit waits to be retried; the revoke's commit
// (desc, carrying every final offset) is never answered before Run
// returns. It checks that Run returned at the final commit's deadline
// with an error containing want (wantDesc says what it should name), and
// that nothing more was sent.
func revokeCommitNeverAnswered(t *testing.T, tps []TP, first commitAnswer, desc, want, wantDesc string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		began := time.Now()
		stopped := h.stopRevoking(func() { h.core.Revoked(tps) }, first)
		hung := h.nextCommit()
		wantOffsets(t, desc, hung.offs, finals...)
		defer func() { hung.answer <- commitAnswer{err: errMovedOn} }() // answered after Run returned

		h.stoppedAtTheDeadline(stopped, began, want, wantDesc)
		h.noCommit("after Run returned")
	})
}

// revokedBehindAnUnansweredInterval stops a member that owns in-0 and
// in-1 while an interval commit is in flight and never answered; the
// client reports a revoke of tps before the final commit's first
// attempt. It checks that Run returned at the final commit's deadline
// with an error saying the final commit did not finish within
// Config.CloseTimeout (wantDesc says what it should name), and that
// nothing was sent behind the interval commit.
func revokedBehindAnUnansweredInterval(t *testing.T, wantDesc string, tps ...TP) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		interval := h.commitOf(off(tp0, 3), off(tp1, 2))
		h.setFinal(off(tp0, 9), off(tp1, 5))
		h.revokeBeforeFirstFinal(tps...)
		began := time.Now()
		stopped := h.stopAsync()

		h.stoppedAtTheDeadline(stopped, began, "did not finish within Config.CloseTimeout", wantDesc)
		h.noCommitBehind(interval)
	})
}

// A partition revoked while the final commit is retried is still this
// member's while the revoke is served: the final offsets of every
// partition still owned, the revoked one included, are committed there
// and then in one commit (as any revoke commits what its drain
// finished), and the final commit has nothing left to send. The revoked
// partition's next owner starts where this member stopped, instead of
// redoing its records.
func TestFinalCommitOfAPartitionRevokedDuringTheRetryIsSentInTheRevoke(t *testing.T) {
	revokedWhileRetrying(t, revoking(tp1), commitAnswer{err: errMovedOn},
		commitStep{"commit in the revoke of in-1", finals, accepted})
}

// A revoke while stopping whose commit is refused is not retried for the
// revoked partition: its next owner decides from then on. The final
// commit goes on with the partitions still owned.
func TestFinalCommitGoesOnAfterTheRevokeCommitIsRefused(t *testing.T) {
	revokedWhileRetrying(t, revoking(tp1), commitAnswer{err: errRebalancing},
		commitStep{"commit in the revoke of in-1", finals, commitAnswer{err: errMovedOn}},
		commitStep{"final commit retried", finals[:1], accepted})
}

// A partition revoked during the retry (the final offsets committed in
// the revoke), assigned again (closing: not owned again) and a kept one
// lost meanwhile: nothing more is sent, neither for the partition
// assigned again nor for the lost one.
func TestFinalCommitRevokedAssignedAgainThenLost(t *testing.T) {
	revokedWhileRetrying(t, func(h *harness) {
		h.core.Revoked([]TP{tp1})
		h.core.Assigned([]TP{tp1})
		h.core.Lost([]TP{tp0})
		h.core.Revoked([]TP{tp1})
	}, commitAnswer{err: errMovedOn}, commitStep{"commit in the revoke of in-1", finals, accepted})
}

// A final commit whose first attempt the broker accepted for some
// partitions and refused for others; a revoke in between commits the
// final offsets again and leaves nothing to retry. Every commit of a
// partition carries the same final offset: none moves a partition back.
func TestFinalCommitPartlyRefusedThenRevokedNeverMovesBack(t *testing.T) {
	partlyRefused := commitAnswer{rejected: []Rejected{{Offset: off(tp1, 5), Err: errRebalancing}}}
	revokedWhileRetrying(t, revoking(tp0), partlyRefused,
		commitStep{"commit in the revoke of in-0", finals, accepted})
}

// The commit a revoke sends while stopping carries the final offsets of
// the partitions kept as well as the revoked ones, so a coordinator that
// never answers it holds back nothing that another commit could have
// carried: Run returns at the final commit's deadline (the commit's 40%
// of CloseTimeout) with an error naming the final offsets not committed,
// and sends nothing more.
func TestFinalCommitRevokeCommitUnansweredEndsAtTheDeadline(t *testing.T) {
	revokeCommitNeverAnswered(t, []TP{tp1}, commitAnswer{err: errMovedOn}, "commit in the revoke of in-1",
		"the final commit of [in/0@9]", "an error naming the final commit of in/0@9, which did not finish")
}

// A revoke commit answered just before the final commit's deadline
// committed everything: Run returns nil without another commit.
func TestFinalCommitSlowRevokeCommitLeavesNothingToSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		began := time.Now()
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errMovedOn})
		slow := h.nextCommit()
		wantOffsets(t, "commit in the revoke of in-1", slow.offs, finals...)
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
		h.revokeBeforeFirstFinal(tp0)
		stopped := h.stopAsync()
		h.answerCommits(commitStep{"commit in the revoke of in-0", finals, commitAnswer{err: errRebalancing}},
			commitStep{"final commit", finals[1:], accepted})
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
		h.answerCommits(
			commitStep{"final commit", []sluice.Offset{off(tp0, 9), off(tp1, 5), off(tp2, 7)}, commitAnswer{err: errRebalancing}},
			commitStep{"commit in the revoke of in-1", []sluice.Offset{off(tp1, 5), off(tp2, 7)}, accepted})
		h.stoppedOK(stopped)
	})
}

// The revoke's commit answered with the revoked partition refused and the
// kept one committed: the retry sends the kept partition again at the
// same offset only (never another one), and Run returns nil.
func TestFinalCommitRevokeCommitPartlyRefusedRetriesTheKeptAtTheSameOffset(t *testing.T) {
	revokedRefused := commitAnswer{rejected: []Rejected{{Offset: off(tp1, 5), Err: errMovedOn}}}
	revokedWhileRetrying(t, revoking(tp1), commitAnswer{err: errRebalancing},
		commitStep{"commit in the revoke of in-1", finals, revokedRefused},
		commitStep{"final commit's retry", finals[:1], accepted})
}

// An interval commit still in flight when Stop begins and never answered:
// a revoke served before the final commit's first attempt sends nothing
// (one commit at a time), and Run returns at the final commit's deadline
// (4s) with an error naming the unsent final commit; nothing is sent
// after Run returned, even once the interval commit is answered.
func TestFinalCommitRevokeBehindAnUnansweredIntervalCommit(t *testing.T) {
	revokedBehindAnUnansweredInterval(t, "an error naming the final commit that did not finish", tp1)
}

// An eager revoke names the whole assignment: when it comes while the
// final commit is retried, the revoke's commit carries every final offset
// and nothing is kept. That commit never answered ends the shutdown at
// the final commit's deadline like an unanswered final commit: Run
// returns an error naming the final offsets not committed (as it does
// when a partition is kept, TestFinalCommitRevokeCommitUnansweredEndsAtTheDeadline),
// not nil.
func TestFinalCommitEagerRevokeCommitUnansweredIsAnError(t *testing.T) {
	revokeCommitNeverAnswered(t, []TP{tp0, tp1}, commitAnswer{err: errRebalancing},
		"commit in the revoke of every partition", "did not finish within Config.CloseTimeout",
		"an error naming the final commit of in/0@9 and in/1@5, which did not finish within Config.CloseTimeout")
}

// The same eager revoke's commit failing with an error that is no
// refusal of the group (the coordinator unreachable): the final offsets
// of every partition failed to commit, and Run returns the error naming
// the failed final commit, as the final commit's own attempt does, not
// nil.
func TestFinalCommitEagerRevokeCommitFailedIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp0, tp1}) }, commitAnswer{err: errRebalancing})
		h.answerCommits(commitStep{"commit in the revoke of every partition", finals,
			commitAnswer{err: errors.New("COORDINATOR_NOT_AVAILABLE")}})

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
	revokedBehindAnUnansweredInterval(t, "an error naming the final commit that was not sent in time", tp0, tp1)
}

// A revoke of one partition while stopping whose commit fails with an
// error that is no refusal of the group (the coordinator unreachable):
// Run returns the error naming the revoked partition's final offset only,
// as sent when it was revoked, and the final commit goes on with the
// partition kept, at its same offset.
func TestFinalCommitRevokeCommitFailedNamesTheRevokedOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		stopped := h.stopRevoking(func() { h.core.Revoked([]TP{tp1}) }, commitAnswer{err: errRebalancing})
		h.answerCommits(
			commitStep{"commit in the revoke of in-1", finals, commitAnswer{err: errors.New("COORDINATOR_NOT_AVAILABLE")}},
			commitStep{"final commit's retry", finals[:1], accepted})

		err := <-stopped
		const want = "the final commit of [in/1@5], sent when they were revoked, failed: COORDINATOR_NOT_AVAILABLE"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want an error containing %q", err, want)
		}
		h.noCommit("after Run returned")
	})
}
