package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A value the store refused, written again on resume and accepted this
// time (the constraint was fixed), has its row in the store: it must
// leave Position.Invalid, or the next member writes it a third time.
func TestAdversaryInvalidOffsetAcceptedOnResumeLeavesInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		o := txsink.Options[int]{BatchSize: 4}

		// Life 1: -1 and -2 refused, dead letters stuck.
		a := advStart(t, s, o, stuckDeadLetters(), bs("0", "-1", "-2", "3"))
		linger(t)
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 2 {
			t.Fatalf("life 1 stored %+v; want Next 1, Written 3, Invalid [1 2]", p)
		}
		a.crash(t)

		// Life 2: the table takes -2 now, still refuses -1 (whose dead
		// letter is still stuck); a new record 4 follows.
		s.Refuse = func(v int) error {
			if v == -1 {
				return errors.New("value is -1")
			}
			return nil
		}
		b := advStart(t, s, o, stuckDeadLetters(), bs("0", "-1", "-2", "3", "4"))
		linger(t)
		p := position(t, s, 0)
		b.crash(t)

		// Life 3: dead letters flow.
		c := advStart(t, s, o, testkit.NewDeadLetters(), bs("0", "-1", "-2", "3", "4"))
		c.f.WaitCommitted(t, topic, 0, 5)
		sameInts(t, "rows after three lives", s.Rows(), []int{0, -2, 3, 4})
		if len(p.Invalid) != 1 || p.Invalid[0] != 1 {
			t.Errorf("life 2 stored %+v; want Invalid [1] (offset 2's row is written)", p)
		}
		must(t, c.r.Stop(t))
	})
}
