package txsink_test

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A member that resumes and writes again only a refused value (its
// dead letter still pending) must not move the stored Written back:
// the rows after that value are in the store already, and a later
// member must still skip them.
func TestAdversaryWrittenNeverMovesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		log := bs("0", "-1", "2")
		o := txsink.Options[int]{BatchSize: 3}

		// Life 1: rows 0 and 2 commit; offset 1 waits for its dead letter.
		a := advStart(t, s, o, stuckDeadLetters(), log)
		linger(t)
		if p := position(t, s, 0); p.Next != 1 || p.Written != 2 {
			t.Fatalf("life 1 stored %+v; want Next 1, Written 2", p)
		}
		a.crash(t)

		// Life 2: offset 1 is written again (refused again, its dead
		// letter still stuck), offset 2 is skipped.
		b := advStart(t, s, o, stuckDeadLetters(), log)
		linger(t)
		p := position(t, s, 0)
		b.crash(t)

		// Life 3: dead letters flow.
		dl := testkit.NewDeadLetters()
		c := advStart(t, s, o, dl, log)
		c.f.WaitCommitted(t, topic, 0, 3)
		sameInts(t, "rows after three lives", s.Rows(), []int{0, 2})
		if p.Written != 2 {
			t.Fatalf("life 2 stored %+v; want Written to stay 2", p)
		}
		must(t, c.r.Stop(t))
	})
}
