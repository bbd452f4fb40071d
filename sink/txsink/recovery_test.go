package txsink_test

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// Exactly once across a loss while a record before the written ones waits
// for its dead letter: the store's position resumes at that record (its
// dead letter is sent again), and the rows after it, written already, are
// not written again.
func TestExactlyOnceAfterLossSkipsWrittenRowsAndRedeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		log := bs("0", "1", "bad", "3", "4", "5")
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}

		a := startGraph(t, s, o, badIsInvalid, stuckDeadLetters())
		a.assign(t, log...)
		// Rows 0, 1, 3, 4, 5 in two transactions; offset 2 waits for its
		// dead letter, so the position resumes there.
		time.Sleep(txsink.DefaultLinger) // fake time: the second batch's linger passes
		synctest.Wait()
		if got := s.Commits(); got != 2 {
			t.Fatalf("%d transactions; want 2", got)
		}
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 {
			t.Fatalf("position with offset 2's dead letter pending: %+v; want Next 2, Written 5", p)
		}
		a.lose(t)

		lastLife(t, s, o, badIsInvalid, append(log, []byte("6")), 7, []int{0, 1, 3, 4, 5, 6}, 2)
	})
}

// A batch of refused values retried after a restart stores the position
// without moving Written back: the rows written after them before the
// restart are not written again.
func TestExactlyOnceRetryOfRefusedValuesKeepsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		log := bs("0", "1", "-2", "3", "4", "5")

		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 6}, stuckDeadLetters())
		m.assign(t, log...)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 {
			t.Fatalf("position with offset 2's dead letter pending: %+v; want Next 2, Written 5", p)
		}
		m.lose(t)

		// Offset 2 is written again (refused again) in a batch of its own.
		m = startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 1}, stuckDeadLetters())
		m.assign(t, log...)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), []int{0, 1, 3, 4, 5})
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 || len(p.Invalid) != 1 || p.Invalid[0] != 2 {
			t.Fatalf("position after offset 2 was refused again: %+v; want Next 2, Written 5, Invalid [2]", p)
		}
		m.lose(t)
	})
}

// Written never moves back: a member that resumes and writes again only
// a refused value (its dead letter still pending) keeps the stored
// Written, so a later member still skips the rows after that value,
// which are in the store already.
func TestWrittenNeverMovesBackAcrossLives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, o, log := refusedThenLost(t)

		// Life 2: offset 1 is written again (refused again, its dead
		// letter still stuck), offset 2 is skipped.
		b := startMember(t, s, o, stuckDeadLetters())
		b.assign(t, log...)
		linger(t)
		p := position(t, s, 0)
		b.lose(t)

		// Life 3: dead letters flow.
		c := startMember(t, s, o, testkit.NewDeadLetters().Option())
		c.assign(t, log...)
		c.fake.WaitCommitted(t, topic, 0, 3)
		sameInts(t, "rows after three lives", s.Rows(), []int{0, 2})
		if p.Written != 2 {
			t.Fatalf("life 2 stored %+v; want Written to stay 2", p)
		}
		must(t, c.run.Stop(t))
	})
}

// A refused value that the store accepts when written again after a
// restart is no longer Invalid: it is not written a third time.
func TestExactlyOnceRefusedValueAcceptedLaterIsWrittenOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		var refuseAll atomic.Bool
		refuseAll.Store(true)
		s.Refuse = func(v int) error {
			if v == -1 || (v < 0 && refuseAll.Load()) {
				return errors.New("value is negative")
			}
			return nil
		}
		log := bs("0", "-1", "-2", "3")

		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}, stuckDeadLetters())
		m.assign(t, log...)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 2 {
			t.Fatalf("position with offsets 1 and 2 refused: %+v; want Next 1, Written 3, Invalid [1 2]", p)
		}
		m.lose(t)

		// -2 is accepted from now on, -1 still refused; [-1 -2] is a batch.
		refuseAll.Store(false)
		m = startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 2}, stuckDeadLetters())
		m.assign(t, log...)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 1 || p.Invalid[0] != 1 {
			t.Fatalf("position after -2 was accepted: %+v; want Next 1, Written 3, Invalid [1]", p)
		}
		m.lose(t)

		lastLife(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}, intsInto, log, 4, []int{-2, 0, 3}, 1)
	})
}

// A refused offset whose value is written again on resume and accepted
// this time (the constraint was fixed) leaves Position.Invalid, its row
// being in the store: the next member does not write it a third time.
func TestRefusedOffsetAcceptedOnResumeLeavesInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}

		// Life 1: -1 and -2 refused, dead letters stuck.
		a := startMember(t, s, o, stuckDeadLetters())
		a.assign(t, bs("0", "-1", "-2", "3")...)
		linger(t)
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 2 {
			t.Fatalf("life 1 stored %+v; want Next 1, Written 3, Invalid [1 2]", p)
		}
		a.lose(t)

		// Life 2: the table takes -2 now, still refuses -1 (whose dead
		// letter is still stuck); a new record 4 follows.
		s.Refuse = func(v int) error {
			if v == -1 {
				return errors.New("value is -1")
			}
			return nil
		}
		b := startMember(t, s, o, stuckDeadLetters())
		b.assign(t, bs("0", "-1", "-2", "3", "4")...)
		linger(t)
		p := position(t, s, 0)
		b.lose(t)

		// Life 3: dead letters flow.
		c := startMember(t, s, o, testkit.NewDeadLetters().Option())
		c.assign(t, bs("0", "-1", "-2", "3", "4")...)
		c.fake.WaitCommitted(t, topic, 0, 5)
		sameInts(t, "rows after three lives", s.Rows(), []int{0, -2, 3, 4})
		if len(p.Invalid) != 1 || p.Invalid[0] != 1 {
			t.Errorf("life 2 stored %+v; want Invalid [1] (offset 2's row is written)", p)
		}
		must(t, c.run.Stop(t))
	})
}

// A stored position past the log's end (the topic was recreated, or
// truncated): the source cannot start at Next, and the records it hands
// over sit below the claimed Next. Their values were never written
// (nothing at those offsets of this log was seen), so each is written
// although its offset is <= Written.
func TestPositionPastTheLogEndStillWritesNewRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}
		runToCommitted(t, s, o, 10, testkit.NewDeadLetters().Option())
		if p := position(t, s, 0); p.Next != 10 || p.Written != 9 {
			t.Fatalf("life 1 stored %+v; want Next 10, Written 9", p)
		}

		// The topic is recreated: its log ends at 3 when the member starts.
		b := startMember(t, s, o, testkit.NewDeadLetters().Option())
		b.assign(t, values(100, 3)...)
		must(t, b.fake.Send(topic, 0, values(103, 10)...)) // offsets 3..12
		b.fake.WaitCommitted(t, topic, 0, 13)
		got := s.Rows()
		delivered := b.fake.Delivered(topic, 0)
		sameInts(t, "rows of the recreated topic's delivered records", got[10:], seq(113-delivered, 113))
		must(t, b.run.Stop(t))
	})
}

// Offsets with gaps (a compacted log): Next and Written are real offsets
// and a restart inside a gap resumes at the next record.
func TestCompactedOffsetsResumeAtTheNextRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		recs := func() []sluice.Record {
			var out []sluice.Record
			for _, off := range []int64{3, 7, 8, 20, 21, 40} {
				out = append(out, sluice.Record{Topic: topic, Offset: off, Value: []byte(strconv.FormatInt(off, 10))})
			}
			return out
		}
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 2}
		a := startMember(t, s, o, testkit.NewDeadLetters().Option())
		a.assign(t)
		must(t, a.fake.SendRecords(recs()[:4]...))
		a.fake.WaitCommitted(t, topic, 0, 21)
		if p := position(t, s, 0); p.Next != 21 || p.Written != 20 {
			t.Fatalf("stored %+v; want Next 21, Written 20", p)
		}
		must(t, a.fake.Lose(topic, 0))
		must(t, a.run.Stop(t))
		b := startMember(t, s, o, testkit.NewDeadLetters().Option())
		b.assign(t)
		must(t, b.fake.SendRecords(recs()...))
		b.fake.WaitCommitted(t, topic, 0, 41)
		sameInts(t, "rows", s.Rows(), []int{3, 7, 8, 20, 21, 40})
		must(t, b.run.Stop(t))
	})
}

// refusedThenLost is the first life of a member over the log 0, -1, 2 in
// batches of 3, with a store that refuses negative values: rows 0 and 2
// commit, offset 1 waits for a dead letter that is never delivered, and
// the partition is lost. It returns the store, the options and the log,
// for the next lives.
func refusedThenLost(t *testing.T) (*txsinktest.MemStore[int], txsink.Options[int], [][]byte) {
	t.Helper()
	s := txsinktest.NewMemStore[int]()
	s.Refuse = refuseNegative
	log := bs("0", "-1", "2")
	o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}
	m := startMember(t, s, o, stuckDeadLetters())
	m.assign(t, log...)
	linger(t)
	if p := position(t, s, 0); p.Next != 1 || p.Written != 2 || len(p.Invalid) != 1 || p.Invalid[0] != 1 {
		t.Fatalf("life 1 stored %+v; want Next 1, Written 2, Invalid [1]", p)
	}
	m.lose(t)
	return s, o, log
}

// Two partitions interleaved, each with a refused value: positions and
// rows are kept per partition, nothing crosses, and a restart writes no
// row again.
func TestInterleavedPartitionsKeepSeparatePositions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}
		// interleave assigns partitions 0 and 1 to m and sends 1i, -1i to
		// partition 0 and 2i to partition 1, for i in 0..2.
		interleave := func(m *member) {
			m.assign(t)
			must(t, m.fake.Assign(topic, 1))
			for i := range 3 {
				d := strconv.Itoa(i)
				must(t, m.fake.Send(topic, 0, bs("1"+d, "-1"+d)...))
				must(t, m.fake.Send(topic, 1, bs("2"+d)...))
			}
			linger(t)
		}
		dl := testkit.NewDeadLetters()
		a := startMember(t, s, o, dl.Option())
		interleave(a)
		a.fake.WaitCommitted(t, topic, 0, 6)
		a.fake.WaitCommitted(t, topic, 1, 3)
		sameInts(t, "rows", s.Rows(), []int{10, 11, 12, 20, 21, 22})
		// Partition 0's Next stays at a refused offset whose dead letter
		// was pending at its last transaction (1 or 3).
		if p0, p1 := position(t, s, 0), position(t, s, 1); p0.Next > 3 || p0.Written != 5 || p1.Next != 3 || p1.Written != 2 {
			t.Fatalf("stored %+v and %+v; want Next 1 or 3, Written 5 and Next 3, Written 2", p0, p1)
		}
		if got := dl.Offsets(topic, 0); len(got) != 3 {
			t.Fatalf("dead letters of partition 0 at %v; want [1 3 5]", got)
		}
		must(t, a.fake.Lose(topic, 0, 1))
		must(t, a.run.Stop(t))

		// Restart: rows once; refused values dead-lettered again at most.
		b := startMember(t, s, o, testkit.NewDeadLetters().Option())
		interleave(b)
		b.fake.WaitCommitted(t, topic, 0, 6)
		// Partition 1 resumes at the store's offset 3, past its log: no
		// record, nothing to commit.
		if got := b.fake.Delivered(topic, 1); got != 0 {
			t.Fatalf("partition 1 delivered %d records after resuming at its end; want 0", got)
		}
		sameInts(t, "rows after the restart", s.Rows(), []int{10, 11, 12, 20, 21, 22})
		must(t, b.run.Stop(t))
	})
}
