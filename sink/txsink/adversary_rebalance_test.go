package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A graceful revoke while a batch's Commit is in progress waits for it:
// the revoke commits exactly what the store committed.
func TestAdversaryRevokeDuringCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		gate := s.HoldCommits()
		a := advStart(t, s, txsink.Options[int]{BatchSize: 4}, testkit.NewDeadLetters(), values(0, 4))
		reply := <-gate // the batch is committing
		revoked := make(chan error)
		go func() { revoked <- a.f.Revoke(topic, 0) }()
		synctest.Wait()
		reply <- nil
		must(t, <-revoked)
		if got, p := a.f.Committed(topic, 0), position(t, s, 0); got != 4 || p.Next != 4 {
			t.Fatalf("after the revoke: group %d, store %+v; want 4 and Next 4", got, p)
		}
		must(t, a.r.Stop(t))
	})
}

// A revoke while a batch is retrying transient errors does not wait for
// the retries; nothing is committed past the batch, and the partition
// assigned again to the same member (an eager rebalance) claims anew and
// writes each row once.
func TestAdversaryRevokeDuringRetryThenReassign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		down := errors.New("connection refused")
		s.FailCommits(down, down, down, down)
		a := advStart(t, s, txsink.Options[int]{BatchSize: 4}, testkit.NewDeadLetters(), values(0, 6))
		time.Sleep(150 * time.Millisecond) // fake time: the first retries
		synctest.Wait()
		must(t, a.f.Revoke(topic, 0))
		if got := a.f.Committed(topic, 0); got != -1 {
			t.Fatalf("the revoke committed %d; want nothing", got)
		}
		must(t, a.f.Assign(topic, 0))
		a.f.WaitCommitted(t, topic, 0, 6)
		sameInts(t, "rows", s.Rows(), seq(0, 6))
		if p := position(t, s, 0); p.Epoch != 2 || p.Next != 6 {
			t.Fatalf("stored %+v; want Epoch 2, Next 6", p)
		}
		if err := a.r.Stop(t); err != nil && !errors.Is(err, down) {
			t.Fatal(err)
		}
	})
}

// A loss while a Commit is in progress; the Commit then applies. The
// next owner resumes from what it stored: each row once.
func TestAdversaryLoseDuringCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		gate := s.HoldCommits()
		a := advStart(t, s, txsink.Options[int]{BatchSize: 4}, testkit.NewDeadLetters(), values(0, 4))
		reply := <-gate
		lost := make(chan error)
		go func() { lost <- a.f.Lose(topic, 0) }()
		synctest.Wait()
		reply <- nil
		must(t, <-lost)
		defer passCommits(gate)() // later commits of the test pass the gate
		must(t, a.r.Stop(t))
		b := advStart(t, s, txsink.Options[int]{BatchSize: 4}, testkit.NewDeadLetters(), values(0, 8))
		b.f.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		must(t, b.r.Stop(t))
	})
}

// A failing Claim fails Assign: nothing is assigned or delivered, and a
// later Assign claims and writes normally.
func TestAdversaryClaimFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.FailClaims(errors.New("database down"))
		w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4})
		f := testkit.NewFake()
		f.UseOffsetStore(w, group)
		r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return w.Write(toInt(in))
		})
		must(t, f.Send(topic, 0, values(0, 4)...))
		if err := f.Assign(topic, 0); err == nil {
			t.Fatal("Assign succeeded with a failing Claim")
		}
		synctest.Wait()
		if n := f.Delivered(topic, 0); n != 0 || len(s.Rows()) != 0 {
			t.Fatalf("after a failed claim: %d delivered, rows %v; want none", n, s.Rows())
		}
		must(t, f.Assign(topic, 0))
		f.WaitCommitted(t, topic, 0, 4)
		sameInts(t, "rows", s.Rows(), seq(0, 4))
		must(t, r.Stop(t))
	})
}

// A lost commit reply while another member claims the partition: the
// first member either reads its commit back (then completes) or sees
// the new epoch (then stops writing); the second resumes where the store
// says. Each row once, whichever happens first.
func TestAdversaryLostReplyRacesAClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		gate := s.HoldCommits()
		o := txsink.Options[int]{BatchSize: 4}
		a := advStart(t, s, o, testkit.NewDeadLetters(), values(0, 4))
		reply := <-gate
		s.LoseCommitReplies(errors.New("connection reset"))
		var b *advRun
		claimed := make(chan struct{})
		go func() {
			b = advStart(t, s, o, testkit.NewDeadLetters(), values(0, 8))
			close(claimed)
		}()
		synctest.Wait() // b's Claim waits for a's lock
		reply <- nil
		defer passCommits(gate)()
		<-claimed
		b.f.WaitCommitted(t, topic, 0, 8)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		if got := a.f.Committed(topic, 0); got != -1 && got != 4 {
			t.Fatalf("a committed %d; want nothing or 4", got)
		}
		must(t, a.r.Stop(t))
		must(t, b.r.Stop(t))
	})
}

// Two partitions interleaved, each with a refused value: positions and
// rows per partition, nothing crosses.
func TestAdversaryTwoPartitionsInterleaved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		dl := testkit.NewDeadLetters()
		a := advStart(t, s, txsink.Options[int]{BatchSize: 3}, dl, nil)
		must(t, a.f.Assign(topic, 1))
		for i := range 3 {
			must(t, a.f.Send(topic, 0, bs("1"+string(rune('0'+i)), "-1"+string(rune('0'+i)))...))
			must(t, a.f.Send(topic, 1, bs("2"+string(rune('0'+i)))...))
		}
		linger(t)
		a.f.WaitCommitted(t, topic, 0, 6)
		a.f.WaitCommitted(t, topic, 1, 3)
		sameInts(t, "rows", s.Rows(), []int{10, 11, 12, 20, 21, 22})
		// Partition 0's Next stays at a refused offset whose dead letter
		// was pending at its last transaction (1 or 3).
		if p0, p1 := position(t, s, 0), position(t, s, 1); p0.Next > 3 || p0.Written != 5 || p1.Next != 3 || p1.Written != 2 {
			t.Fatalf("stored %+v and %+v; want Next 1 or 3, Written 5 and Next 3, Written 2", p0, p1)
		}
		if got := dl.Offsets(topic, 0); len(got) != 3 {
			t.Fatalf("dead letters of partition 0 at %v; want [1 3 5]", got)
		}
		must(t, a.f.Lose(topic, 0, 1))
		must(t, a.r.Stop(t))

		// Restart: rows once; refused values dead-lettered again at most.
		dl2 := testkit.NewDeadLetters()
		b := advStart(t, s, txsink.Options[int]{BatchSize: 3}, dl2, nil)
		must(t, b.f.Assign(topic, 1))
		for i := range 3 {
			must(t, b.f.Send(topic, 0, bs("1"+string(rune('0'+i)), "-1"+string(rune('0'+i)))...))
			must(t, b.f.Send(topic, 1, bs("2"+string(rune('0'+i)))...))
		}
		linger(t)
		b.f.WaitCommitted(t, topic, 0, 6)
		// Partition 1 resumes at the store's offset 3, past its log: no
		// record, nothing to commit.
		if got := b.f.Delivered(topic, 1); got != 0 {
			t.Fatalf("partition 1 delivered %d records after resuming at its end; want 0", got)
		}
		sameInts(t, "rows after the restart", s.Rows(), []int{10, 11, 12, 20, 21, 22})
		must(t, b.r.Stop(t))
	})
}

// passCommits lets every Commit held at gate go on until the returned
// function is called.
func passCommits(gate <-chan chan error) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case r := <-gate:
				r <- nil
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
