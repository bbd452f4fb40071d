package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A commit whose reply was lost (it applied) is not written again: the
// Writer reads the position back, and when that read fails too it reads
// again before the batch is written again.
func TestLostCommitReplyIsNotWrittenTwice(t *testing.T) {
	for _, c := range []struct {
		name  string
		reads []error
	}{
		{"read back at once", nil},
		{"read back after a failed read", []error{errors.New("connection refused")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := txsinktest.NewMemStore[int]()
				s.LoseCommitReplies(errors.New("connection reset"))
				s.FailReads(c.reads...)
				m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}, testkit.NewDeadLetters().Option())
				m.assign(t, values(0, 8)...)
				m.finish(t, s, 8)
			})
		})
	}
}

// A resumed member whose first batch only writes again a value the
// store refused before (accepted now: the constraint was fixed) has a
// commit that failed without applying: the read-back does not take the
// claimed Written (past the batch) for this batch's commit, so the batch
// is retried and the value's row written.
func TestFailedCommitRewritingARefusedValueIsNotTakenForCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, o, log := refusedThenLost(t)
		s.Refuse = nil // the table now takes -1
		s.FailCommits(errors.New("serialization failure"))
		dl := testkit.NewDeadLetters()
		b := startMember(t, s, o, dl.Option())
		b.assign(t, log...)
		b.fake.WaitCommitted(t, topic, 0, 3)
		deadLettered(t, dl) // none: the store accepts -1 now
		sameInts(t, "rows", s.Rows(), []int{0, -1, 2})
		must(t, b.run.Stop(t))
	})
}

// A lost commit reply while another member claims the partition: the
// first member either reads its commit back (then completes) or sees
// the new epoch (then stops writing); the second resumes where the store
// says. Each row once, whichever happens first.
func TestLostCommitReplyRacingAClaimWritesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := holdFirstCommit(t)
		s, a := h.s, h.a
		s.LoseCommitReplies(errors.New("connection reset"))
		b := startMember(t, s, h.o, testkit.NewDeadLetters().Option())
		claimed := make(chan struct{})
		go func() {
			b.assign(t, values(0, 8)...)
			close(claimed)
		}()
		synctest.Wait() // b's Claim waits for a's lock
		h.reply <- nil
		defer passCommits(h.gate)()
		<-claimed
		b.fake.WaitCommitted(t, topic, 0, 8)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		if got := a.fake.Committed(topic, 0); got != -1 && got != 4 {
			t.Fatalf("a committed %d; want nothing or 4", got)
		}
		must(t, a.run.Stop(t))
		must(t, b.run.Stop(t))
	})
}
