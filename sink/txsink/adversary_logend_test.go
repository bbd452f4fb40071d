package txsink_test

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// The store's position is past the log's end (the topic was recreated,
// or truncated): the source cannot start at Next, and the records it
// hands over sit below the claimed Next. Their values were never written
// (nothing at those offsets of this log was seen): skipping them as
// "written already" because their offsets are <= Written loses them.
func TestAdversaryStoreBeyondLogEndSkipsNewRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{BatchSize: 4}
		a := advStart(t, s, o, testkit.NewDeadLetters(), values(0, 10))
		a.f.WaitCommitted(t, topic, 0, 10)
		must(t, a.r.Stop(t))
		if p := position(t, s, 0); p.Next != 10 || p.Written != 9 {
			t.Fatalf("life 1 stored %+v; want Next 10, Written 9", p)
		}

		// The topic is recreated: its log ends at 3 when the member starts.
		b := advStart(t, s, o, testkit.NewDeadLetters(), values(100, 3))
		must(t, b.f.Send(topic, 0, values(103, 10)...)) // offsets 3..12
		b.f.WaitCommitted(t, topic, 0, 13)
		got := s.Rows()
		delivered := b.f.Delivered(topic, 0)
		sameInts(t, "rows of the recreated topic's delivered records", got[10:], seq(113-delivered, 113))
		must(t, b.r.Stop(t))
	})
}
