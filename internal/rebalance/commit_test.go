package rebalance

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

func wantOffsets(t *testing.T, what string, got []sluice.Offset, want ...sluice.Offset) {
	t.Helper()
	if g, w := engine.OffsetsString(got), engine.OffsetsString(want); g != w {
		t.Fatalf("%s: %s, want %s", what, g, w)
	}
}

func commitError(t *testing.T, c committed) *sluice.CommitError {
	t.Helper()
	var ce *sluice.CommitError
	if !errors.As(c.err, &ce) {
		t.Fatalf("Committed(%v) error %v (%T), want a *sluice.CommitError", c.offs, c.err, c.err)
	}
	return ce
}

// A background commit that failed (the whole request, or one partition)
// is retried at the next interval with what failed, and reported as the
// interval commit's CommitError wrapping the cause.
func TestFailedIntervalCommitRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  commitAnswer
		retried []sluice.Offset
		errText string
	}{
		{"request", commitAnswer{err: errRebalancing}, []sluice.Offset{off(tp0, 5), off(tp1, 7)},
			"interval commit of [in/0@5 in/1@7]: REBALANCE_IN_PROGRESS"},
		{"partition", commitAnswer{rejected: []Rejected{{Offset: off(tp0, 5), Err: errRebalancing}}}, []sluice.Offset{off(tp0, 5)},
			"interval commit of [in/0@5 in/1@7]: partitions [in/0@5] not committed: REBALANCE_IN_PROGRESS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t)
				h.assign(tp0, tp1)
				c := h.commitOf(off(tp0, 5), off(tp1, 7))
				wantOffsets(t, "first interval commit", c.offs, off(tp0, 5), off(tp1, 7))
				c.answer <- tc.answer
				retry := h.nextCommit()
				wantOffsets(t, "next interval commit", retry.offs, tc.retried...)
				retry.ok()
				time.Sleep(3 * time.Second)
				synctest.Wait()
				h.noCommit("after the retry succeeded")
				h.stopOK()
				seen := h.g.commitsSeen()
				if len(seen) != 2 || seen[1].err != nil {
					t.Fatalf("Committed calls %v, want the failure then the retry's success", seen)
				}
				ce := commitError(t, seen[0])
				if ce.Reason != "interval" || ce.Error() != tc.errText || !errors.Is(ce, errRebalancing) {
					t.Errorf("commit error %q (reason %q), want %q wrapping the cause", ce, ce.Reason, tc.errText)
				}
			})
		})
	}
}

// A failed background commit is not retried for a partition that got a
// newer offset meanwhile (the newer one is sent), nor for one given up
// and assigned again meanwhile (a new ownership starts from its own
// offsets).
func TestFailedIntervalCommitNotRetriedOverNewer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		c := h.commitOf(off(tp0, 5), off(tp1, 7))
		h.g.report(off(tp0, 9)) // collected at the next interval, before the answer is handled
		time.Sleep(time.Second)
		synctest.Wait()
		// tp1 is lost and assigned again while the commit is in flight;
		// the loss waits for the commit (bounded by the 4s commit
		// timeout), which stays unanswered.
		h.do(func() {
			h.core.Lost([]TP{tp1})
			h.core.Assigned([]TP{tp1})
		})
		c.answer <- commitAnswer{err: errRebalancing}
		retry := h.nextCommit()
		wantOffsets(t, "commit after the failure", retry.offs, off(tp0, 9))
		retry.ok()
		h.stopOK()
		h.bg.Wait()
	})
}

// Offsets of partitions the core does not own are never sent.
func TestCommitFencedToOwnedPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		c := h.commitOf(off(tp0, 5), off(tp1, 7))
		wantOffsets(t, "interval commit", c.offs, off(tp0, 5))
		c.ok()
		h.setFinal(off(tp0, 6), off(tp1, 8))
		stopped := h.stopAsync()
		final := h.nextCommit()
		wantOffsets(t, "final commit", final.offs, off(tp0, 6))
		final.ok()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
}

// One commit at a time: while a background commit is unanswered,
// intervals send nothing; once it is answered the next interval sends the
// newest offsets.
func TestOneCommitInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		c := h.commitOf(off(tp0, 5))
		h.g.report(off(tp0, 9))
		h.sendsOnlyOnceAnswered(c, 5*time.Second, off(tp0, 9))
		h.stopOK()
	})
}

// The final commit waits for the commit in flight; when that stays
// unanswered for the whole commit timeout, the final commit is not sent
// (it could land before the older one) and Run says so.
func TestFinalCommitNotSentBehindUnansweredCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		c := h.commitOf(off(tp0, 5))
		h.setFinal(off(tp0, 9))
		err := h.stop()
		want := "test: shutdown: the final commit of [in/0@9] did not finish within Config.CloseTimeout (10s): " +
			"not sent: the earlier interval commit of [in/0@5] was still unanswered after 4s"
		if err == nil || err.Error() != want {
			t.Fatalf("Run = %v, want %q", err, want)
		}
		h.noCommit("behind the unanswered commit")
		seen := h.g.commitsSeen()
		if len(seen) != 1 || commitError(t, seen[0]).Reason != "shutdown" {
			t.Errorf("Committed calls %v, want the shutdown's failure", seen)
		}
		c.ok()
		h.bg.Wait()
	})
}

// A revoke's commit unanswered within the commit timeout is abandoned:
// reported failed, and it stays the commit in flight, so nothing else is
// sent before it is answered.
func TestRevokeCommitAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		h.g.mu.Lock()
		h.g.revoke = []sluice.Offset{off(tp0, 3)}
		h.g.mu.Unlock()
		revoked := h.doAsync(func() {
			h.core.Revoked([]TP{tp0})
		})
		c := h.nextCommit()
		wantOffsets(t, "revoke commit", c.offs, off(tp0, 3))
		<-revoked
		seen := h.g.commitsSeen()
		if len(seen) != 1 {
			t.Fatalf("Committed calls %v, want the revoke's", seen)
		}
		if ce := commitError(t, seen[0]); ce.Reason != "revoke" || ce.Err.Error() != "commit did not finish after 4s" {
			t.Errorf("revoke commit error %q, want the revoke's commit not finished after 4s", ce)
		}
		h.g.report(off(tp1, 4))
		h.sendsOnlyOnceAnswered(c, 3*time.Second, off(tp1, 4))
		time.Sleep(PollIdle) // the loop handles the answer
		synctest.Wait()
		h.stopOK()
		if n := len(h.g.commitsSeen()); n != 2 {
			t.Errorf("%d Committed calls, want 2: the abandoned commit's outcome is only logged", n)
		}
	})
}

// A loss waits for the commit in flight that holds a lost partition
// before it returns (so that commit cannot land after the next owner's):
// its outcome is handled inside the loss.
func TestLossWaitsForCommitInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		c := h.commitOf(off(tp0, 5))
		lost := h.doAsync(func() {
			h.core.Lost([]TP{tp0})
		})
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-lost:
			t.Fatal("the loss returned before the commit in flight of its partition was answered")
		default:
		}
		c.ok()
		<-lost
		if seen := h.g.commitsSeen(); len(seen) != 1 || seen[0].err != nil {
			t.Errorf("Committed calls %v when the loss returned, want the commit's success", seen)
		}
		h.stopOK()
	})
}

// A loss of partitions the commit in flight does not hold does not wait.
func TestLossOfOtherPartitionDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0, tp1)
		c := h.commitOf(off(tp0, 5))
		began := time.Now()
		h.do(func() {
			h.core.Lost([]TP{tp1})
		})
		if took := time.Since(began); took != 0 {
			t.Errorf("the loss of in/1 took %v behind a commit of in/0, want no wait", took)
		}
		c.ok()
		h.stopOK()
	})
}

// The final commit is retried while the coordinator answers
// REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION (the group moved to a
// generation that may still give the partition to this member); a
// rejection because the member left the group is no error; any other
// failure is, naming the offsets.
func TestFinalCommitOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []commitAnswer
		want    string
	}{
		{"retried", []commitAnswer{{err: errRebalancing}, {}}, ""},
		{"generation moved, partition kept", []commitAnswer{{err: errMovedOn}, {}}, ""},
		{"not a member", []commitAnswer{{err: errNotMember}}, ""},
		{"failed", []commitAnswer{{err: errors.New("boom")}}, "test: shutdown: the final commit of [in/0@9] failed: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t)
				h.assign(tp0)
				h.setFinal(off(tp0, 9))
				stopped := h.stopAsync()
				for _, a := range tc.answers {
					c := h.nextCommit()
					wantOffsets(t, "final commit", c.offs, off(tp0, 9))
					c.answer <- a
				}
				err := <-stopped
				if got := errString(err); got != tc.want {
					t.Fatalf("Run = %q, want %q", got, tc.want)
				}
				events := h.b.calls()
				want := strings.Repeat("retry ", len(tc.answers)-1) + "leave close"
				if events != want {
					t.Errorf("backend calls %q, want %q", events, want)
				}
			})
		})
	}
}

// A final commit the coordinator still answers with REBALANCE_IN_PROGRESS
// when its share of CloseTimeout runs out was refused because the group
// is moving on, as an ILLEGAL_GENERATION is: no record is at risk (the
// next owner starts from the previous commit), so Run returns nil and
// logs a warning saying so, for either refusal.
func TestFinalCommitRefusedByTheGroupIsAWarningNotAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"rebalancing until the deadline", errRebalancing}, {"generation moved until the deadline", errMovedOn}, {"not a member", errNotMember}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := newLogRecorder()
				h := startLogged(t, slog.New(logs))
				h.assign(tp0)
				h.setFinal(off(tp0, 9))
				stopped := h.stopAsync()
				for {
					select {
					case err := <-stopped:
						if err != nil {
							t.Fatalf("Run = %v, want nil (the group refused the commit: duplicates, no loss)", err)
						}
						if !logs.logged(slog.LevelWarn, FinalCommitRefused) {
							t.Fatalf("logs %q, want a warning %q", logs.all(), FinalCommitRefused)
						}
						return
					case c := <-h.b.commits:
						wantOffsets(t, "final commit", c.offs, off(tp0, 9))
						c.answer <- commitAnswer{err: tc.err}
					}
				}
			})
		})
	}
}

// A final commit refused because the generation moved is retried only
// while the partition is still owned: when the client reports it lost
// meanwhile (the member was fenced, not rebalanced), nothing more is
// sent and Run returns nil.
func TestFinalCommitNotRetriedForAPartitionLostMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		h.setFinal(off(tp0, 9))
		h.b.waitToRetry = func() { h.core.Lost([]TP{tp0}) }
		stopped := h.stopAsync()
		c := h.nextCommit()
		wantOffsets(t, "final commit", c.offs, off(tp0, 9))
		c.answer <- commitAnswer{err: errMovedOn}
		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if got, want := h.b.calls(), "retry leave close"; got != want {
			t.Errorf("backend calls %q, want %q", got, want)
		}
		select {
		case c := <-h.b.commits:
			t.Fatalf("a commit of %v was sent for a partition lost meanwhile", c.offs)
		default:
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A retry of a final commit the group refused (its generation moved) that
// is still unanswered when the commit timeout runs out is a refusal too:
// Run returns nil and logs FinalCommitRefused, as when the last answer
// was a refusal. The commits before it were refused, so whether it lands
// or not, no record is lost.
func TestFinalCommitRetryCutByTheDeadlineAfterRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := newLogRecorder()
		h := startLogged(t, slog.New(logs))
		h.assign(tp0)
		h.setFinal(off(tp0, 9))
		deadline := time.Now().Add(h.core.commitTimeout())
		stopped := h.stopAsync()
		var last *commitCall
		for last == nil {
			c := h.nextCommit()
			wantOffsets(t, "final commit", c.offs, off(tp0, 9))
			if time.Until(deadline) < 3*FinalCommitRetry {
				last = c // left unanswered past the deadline
				break
			}
			c.answer <- commitAnswer{err: errMovedOn}
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Run = %v, want nil (the group refused the commits before the one cut short)", err)
		}
		if !logs.logged(slog.LevelWarn, FinalCommitRefused) {
			t.Fatalf("logs %q, want a warning %q", logs.all(), FinalCommitRefused)
		}
		last.answer <- commitAnswer{err: errMovedOn}
		h.bg.Wait()
	})
}

// A first final commit still unanswered at the deadline, with no refusal
// before it, stays an error naming CloseTimeout: nothing says the group
// moved on.
func TestFinalCommitUnansweredWithoutRefusalIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.assign(tp0)
		h.setFinal(off(tp0, 9))
		stopped := h.stopAsync()
		c := h.nextCommit()
		err := <-stopped
		if err == nil || !strings.Contains(err.Error(), "did not finish within Config.CloseTimeout") {
			t.Fatalf("Run = %v, want the final commit not finished within CloseTimeout", err)
		}
		c.ok()
		h.bg.Wait()
	})
}
