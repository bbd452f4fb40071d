package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A commit whose reply was lost while the connection stays down for the
// read-back too: the batch committed, so retrying it must not write its
// rows a second time.
func TestAdversaryLostCommitReplyAndFailedReadBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.LoseCommitReplies(errors.New("connection reset"))
		s.FailReads(errors.New("connection refused"))
		m := startMember(t, txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}))
		must(t, m.fake.Send(topic, 0, values(0, 8)...))
		must(t, m.fake.Assign(topic, 0))
		m.fake.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		must(t, m.run.Stop(t))
	})
}

// A resumed member whose first batch only writes again a value the
// store refused before (now accepted: the constraint was fixed) has a
// transient commit failure that did not apply: the read-back must not
// take the claimed Written (past the batch) for this batch's commit.
func TestAdversaryFailedCommitOfReWrittenValueIsNotTakenAsCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		log := bs("0", "-1", "2")
		o := txsink.Options[int]{BatchSize: 3}
		a := advStart(t, s, o, stuckDeadLetters(), log)
		linger(t)
		if p := position(t, s, 0); p.Next != 1 || p.Written != 2 || len(p.Invalid) != 1 {
			t.Fatalf("life 1 stored %+v; want Next 1, Written 2, Invalid [1]", p)
		}
		a.crash(t)

		s.Refuse = nil // the table now takes -1
		s.FailCommits(errors.New("serialization failure"))
		b := advStart(t, s, o, testkit.NewDeadLetters(), log)
		b.f.WaitCommitted(t, topic, 0, 3)
		if got := b.dl.Offsets(topic, 0); len(got) != 0 {
			t.Fatalf("dead letters at %v; want none (the store accepts -1 now)", got)
		}
		sameInts(t, "rows", s.Rows(), []int{0, -1, 2})
		must(t, b.r.Stop(t))
	})
}
