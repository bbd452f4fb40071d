package txsink_test

import (
	"context"
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

// A transient commit failure is retried: every row once, exactly-once or
// not (nothing applied).
func TestTransientCommitFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.FailCommits(errors.New("serialization failure"), errors.New("deadlock"))
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 4})
		m.assign(t, values(0, 8)...)
		m.finish(t, s, 8)
	})
}

// A failing Begin, of the batch's transaction and again of the one that
// writes the batch value by value to isolate a refused value, is
// transient: it is retried, and no nil transaction is used.
func TestFailedBeginIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		busy := errors.New("pool exhausted")
		s.FailBegins(busy, nil, busy) // the batch's Begin, then the isolation's
		dl := testkit.NewDeadLetters()
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}, dl.Option())
		m.assign(t, bs("0", "-1", "2")...)
		linger(t)
		m.fake.WaitCommitted(t, topic, 0, 3)
		sameInts(t, "rows", s.Rows(), []int{0, 2})
		deadLettered(t, dl, 1)
		must(t, m.run.Stop(t))
	})
}

// A commit the store refuses as Invalid (a constraint checked at commit)
// makes the Writer write the batch value by value, as a refused Write
// does: here no value is refused then, and every value is written once.
func TestInvalidCommitIsolatesTheBatch(t *testing.T) {
	inBothModes(t, func(t *testing.T, eos bool) {
		s := txsinktest.NewMemStore[int]()
		s.FailCommits(sluice.Invalid(errors.New("deferred constraint violated")))
		dl := testkit.NewDeadLetters()
		m := startMember(t, s, txsink.Options[int]{ExactlyOnce: eos, BatchSize: 4}, dl.Option())
		m.assignCommitted(t, 4)
		must(t, m.fake.Send(topic, 0, values(4, 4)...))
		m.fake.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		if dl.Len() != 0 {
			t.Fatalf("%d dead letters; want none", dl.Len())
		}
		must(t, m.run.Stop(t))
	})
}

// Transient errors that outlast the retry policy stop Run with the
// error; nothing of the batch is committed anywhere, and the next life
// writes each row once.
func TestExhaustedRetriesStopRunAndCommitNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		down := errors.New("connection refused")
		s.FailCommits(down, down, down)
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}
		a := startMember(t, s, o, testkit.NewDeadLetters().Option(),
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 3, Initial: 1, Max: 1}))
		a.assign(t, values(0, 4)...)
		if err := a.run.Wait(t); !errors.Is(err, down) {
			t.Fatalf("Run returned %v; want the store's error", err)
		}
		if got, p := a.fake.Committed(topic, 0), position(t, s, 0); got != -1 || p.Next != -1 || len(s.Rows()) != 0 {
			t.Fatalf("after the failure: group %d, store %+v, rows %v; want nothing", got, p, s.Rows())
		}
		b := startMember(t, s, o, testkit.NewDeadLetters().Option())
		b.assign(t, values(0, 4)...)
		b.finish(t, s, 4)
	})
}

// panickyStore is a MemStore whose transactions panic in Commit (a
// driver bug), after StoreOffset locked the partition's position.
type panickyStore struct{ *txsinktest.MemStore[int] }

func (p panickyStore) Begin(ctx context.Context) (txsink.Tx[int], error) {
	tx, err := p.MemStore.Begin(ctx)
	return panickyTx{tx}, err
}

type panickyTx struct{ txsink.Tx[int] }

func (panickyTx) Commit(context.Context) error { panic("driver bug") }

// A panic in the store's Commit stops Run with a PanicError, and the
// transaction is rolled back (Tx.Rollback "is called after any error"):
// it does not keep the partition's position locked, and the next owner's
// Claim goes through.
func TestPanicInCommitRollsBackTheTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		m := startMember(t, panickyStore{s}, txsink.Options[int]{ExactlyOnce: true, BatchSize: 2})
		m.assign(t, values(0, 2)...)
		var pe *sluice.PanicError
		if err := m.run.Wait(t); !errors.As(err, &pe) {
			t.Fatalf("Run returned %v; want a PanicError", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.Claim(ctx, group, []sluice.TopicPartition{{Topic: topic}}); err != nil {
			t.Fatalf("the next owner's Claim after the panic: %v; want it to succeed", err)
		}
	})
}

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
