package txsink_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// A member whose partition another member claimed (a zombie) cannot
// write or commit: its batch is rolled back, its offsets stay, and the
// new owner writes each row once.
func TestZombieIsFencedByTheNextClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 5}
		a := startMember(t, s, o)
		a.assignCommitted(t, 5)

		b := startMember(t, s, o)
		b.assign(t, values(0, 10)...) // claims: a is fenced from here on

		must(t, a.fake.Send(topic, 0, values(5, 5)...)) // a still believes it owns the partition
		b.fake.WaitCommitted(t, topic, 0, 10)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), seq(0, 10))
		if got := a.fake.Committed(topic, 0); got != 5 {
			t.Fatalf("the fenced member committed offset %d; want 5 (nothing after the claim)", got)
		}
		must(t, a.run.Stop(t))
		must(t, b.run.Stop(t))
	})
}

// A graceful revoke while a batch's Commit is in progress waits for it:
// the revoke commits exactly what the store committed.
func TestRevokeWaitsForACommitInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := holdFirstCommit(t)
		must(t, h.during(func() error { return h.a.fake.Revoke(topic, 0) }))
		if got, p := h.a.fake.Committed(topic, 0), position(t, h.s, 0); got != 4 || p.Next != 4 {
			t.Fatalf("after the revoke: group %d, store %+v; want 4 and Next 4", got, p)
		}
		must(t, h.a.run.Stop(t))
	})
}

// A revoke while a batch is retrying transient errors does not wait for
// the retries; nothing is committed past the batch, and the partition
// assigned again to the same member (an eager rebalance) claims anew and
// writes each row once.
func TestRevokeDuringRetriesCommitsNothingAndReassignWritesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		down := errors.New("connection refused")
		s.FailCommits(down, down, down, down)
		a := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}, testkit.NewDeadLetters().Option())
		a.assign(t, values(0, 6)...)
		time.Sleep(150 * time.Millisecond) // fake time: the first retries
		synctest.Wait()
		must(t, a.fake.Revoke(topic, 0))
		if got := a.fake.Committed(topic, 0); got != -1 {
			t.Fatalf("the revoke committed %d; want nothing", got)
		}
		must(t, a.fake.Assign(topic, 0))
		a.fake.WaitCommitted(t, topic, 0, 6)
		sameInts(t, "rows", s.Rows(), seq(0, 6))
		if p := position(t, s, 0); p.Epoch != 2 || p.Next != 6 {
			t.Fatalf("stored %+v; want Epoch 2, Next 6", p)
		}
		if err := a.run.Stop(t); err != nil && !errors.Is(err, down) {
			t.Fatal(err)
		}
	})
}

// A loss while a Commit is in progress; the Commit then applies. The
// next owner resumes from what it stored: each row once.
func TestLossDuringACommitResumesFromTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := holdFirstCommit(t)
		must(t, h.during(func() error { return h.a.fake.Lose(topic, 0) }))
		defer passCommits(h.gate)() // later commits of the test pass the gate
		must(t, h.a.run.Stop(t))
		b := startMember(t, h.s, h.o, testkit.NewDeadLetters().Option())
		b.assign(t, values(0, 8)...)
		b.finish(t, h.s, 8)
	})
}

// A failing Claim fails Assign: nothing is assigned or delivered, and a
// later Assign claims and writes normally.
func TestFailedClaimFailsAssign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.FailClaims(errors.New("database down"))
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4})
		must(t, m.fake.Send(topic, 0, values(0, 4)...))
		if err := m.fake.Assign(topic, 0); err == nil {
			t.Fatal("Assign succeeded with a failing Claim")
		}
		synctest.Wait()
		if n := m.fake.Delivered(topic, 0); n != 0 || len(s.Rows()) != 0 {
			t.Fatalf("after a failed claim: %d delivered, rows %v; want none", n, s.Rows())
		}
		m.assign(t)
		m.finish(t, s, 4)
	})
}

// heldCommit is a member whose first batch, the values 0..3, waits in
// its Commit (MemStore.HoldCommits) until the test sends reply.
type heldCommit struct {
	s     *txsinktest.MemStore[int]
	o     txsink.Options[int]
	gate  <-chan chan error // every later Commit waits here
	a     *member
	reply chan error // the first batch's Commit goes on once nil is sent
}

// holdFirstCommit starts a heldCommit over a new store and returns once
// its first batch's Commit waits.
func holdFirstCommit(t *testing.T) *heldCommit {
	t.Helper()
	h := &heldCommit{s: txsinktest.NewMemStore[int](), o: txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}}
	h.gate = h.s.HoldCommits()
	h.a = startMember(t, h.s, h.o, testkit.NewDeadLetters().Option())
	h.a.assign(t, values(0, 4)...)
	h.reply = <-h.gate
	return h
}

// during runs op (a revoke, a loss) while the first batch's Commit waits,
// lets the Commit apply once op blocks, and returns op's error.
func (h *heldCommit) during(op func() error) error {
	done := make(chan error)
	go func() { done <- op() }()
	synctest.Wait()
	h.reply <- nil
	return <-done
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

// After a graceful revoke the store's position is the partition's final
// one, past a record dead-lettered after the last rows were written, so
// the next owner neither writes a row again nor dead-letters again.
func TestGracefulRevokeStoresTheFinalPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		log := bs("0", "1", "2", "bad")
		for i, want := range []int{1, 0} {
			dl := testkit.NewDeadLetters()
			m := startGraph(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}, badIsInvalid, dl.Option())
			m.assign(t, log...)
			if i == 0 {
				m.fake.WaitCommitted(t, topic, 0, 4)
			}
			must(t, m.fake.Revoke(topic, 0))
			if got := dl.Len(); got != want {
				t.Fatalf("member %d: %d dead letters; want %d", i+1, got, want)
			}
			if p := position(t, s, 0); p.Next != 4 || p.Written != 2 {
				t.Fatalf("member %d: position after the revoke %+v; want Next 4, Written 2", i+1, p)
			}
			must(t, m.run.Stop(t))
		}
		sameInts(t, "rows", s.Rows(), []int{0, 1, 2})
	})
}
