package txsink_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// flaky is a MemStore whose next Begins and Reads fail with the errors
// queued (a nil error lets the call through).
type flaky struct {
	*txsinktest.MemStore[int]
	mu     sync.Mutex
	begins []error
	reads  []error
}

func pop(mu *sync.Mutex, q *[]error) error {
	mu.Lock()
	defer mu.Unlock()
	if len(*q) == 0 {
		return nil
	}
	err := (*q)[0]
	*q = (*q)[1:]
	return err
}

func (f *flaky) Begin(ctx context.Context) (txsink.Tx[int], error) {
	if err := pop(&f.mu, &f.begins); err != nil {
		return nil, err
	}
	return f.MemStore.Begin(ctx)
}

func (f *flaky) Read(ctx context.Context, group string, tp sluice.TopicPartition) (txsink.Position, bool, error) {
	if err := pop(&f.mu, &f.reads); err != nil {
		return txsink.Position{}, false, err
	}
	return f.MemStore.Read(ctx, group, tp)
}

// run is one member's Run over the log of partition 0, with the dead
// letters dl, until the test stops it.
func run(t *testing.T, s txsink.Store[int], o txsink.Options[int], dl *testkit.DeadLetters, log [][]byte) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	o.ExactlyOnce = true
	w := txsink.New[int](s, o)
	f := testkit.NewFake()
	f.UseOffsetStore(w, group)
	r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(toInt(in))
	}, dl.Option())
	must(t, f.Send(topic, 0, log...))
	must(t, f.Assign(topic, 0))
	return f, r
}

// lose takes partition 0 away as lost and stops the member; its refused
// values' dead letters were not delivered.
func lose(t *testing.T, f *testkit.Fake, r *testkit.Running) {
	t.Helper()
	must(t, f.Lose(topic, 0))
	if err := r.Stop(t); err != nil && !errors.Is(err, sluice.ErrNotDeadLettered) {
		t.Fatal(err)
	}
}

// A batch of refused values retried after a restart stores the position
// without moving Written back: the rows written after them before the
// restart are not written again.
func TestExactlyOnceRetryOfRefusedValuesKeepsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		log := [][]byte{[]byte("0"), []byte("1"), []byte("-2"), []byte("3"), []byte("4"), []byte("5")}

		f, r := run(t, s, txsink.Options[int]{BatchSize: 6}, stuckDeadLetters(), log)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 {
			t.Fatalf("position with offset 2's dead letter pending: %+v; want Next 2, Written 5", p)
		}
		lose(t, f, r)

		// Offset 2 is written again (refused again) in a batch of its own.
		f, r = run(t, s, txsink.Options[int]{BatchSize: 1}, stuckDeadLetters(), log)
		synctest.Wait()
		sameInts(t, "rows", s.Rows(), []int{0, 1, 3, 4, 5})
		if p := position(t, s, 0); p.Next != 2 || p.Written != 5 || len(p.Invalid) != 1 || p.Invalid[0] != 2 {
			t.Fatalf("position after offset 2 was refused again: %+v; want Next 2, Written 5, Invalid [2]", p)
		}
		lose(t, f, r)
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
		log := [][]byte{[]byte("0"), []byte("-1"), []byte("-2"), []byte("3")}

		f, r := run(t, s, txsink.Options[int]{BatchSize: 4}, stuckDeadLetters(), log)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 2 {
			t.Fatalf("position with offsets 1 and 2 refused: %+v; want Next 1, Written 3, Invalid [1 2]", p)
		}
		lose(t, f, r)

		// -2 is accepted from now on, -1 still refused; [-1 -2] is a batch.
		refuseAll.Store(false)
		f, r = run(t, s, txsink.Options[int]{BatchSize: 2}, stuckDeadLetters(), log)
		synctest.Wait()
		if p := position(t, s, 0); p.Next != 1 || p.Written != 3 || len(p.Invalid) != 1 || p.Invalid[0] != 1 {
			t.Fatalf("position after -2 was accepted: %+v; want Next 1, Written 3, Invalid [1]", p)
		}
		lose(t, f, r)

		dl := testkit.NewDeadLetters()
		f, r = run(t, s, txsink.Options[int]{BatchSize: 4}, dl, log)
		f.WaitCommitted(t, topic, 0, 4)
		sameInts(t, "rows", s.Rows(), []int{-2, 0, 3})
		if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 1 {
			t.Fatalf("dead letters at %v; want [1]", got)
		}
		must(t, r.Stop(t))
	})
}

// A transient failure to begin the transaction that writes a batch value
// by value is retried like any other.
func TestBeginFailureWhileIsolatingIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &flaky{MemStore: txsinktest.NewMemStore[int]()}
		s.Refuse = refuseNegative
		s.begins = []error{nil, errors.New("connection reset")} // the second Begin: the isolating one
		dl := testkit.NewDeadLetters()
		f, r := run(t, s, txsink.Options[int]{BatchSize: 3}, dl, [][]byte{[]byte("1"), []byte("-2"), []byte("3")})
		f.WaitCommitted(t, topic, 0, 3)
		sameInts(t, "rows", s.Rows(), []int{1, 3})
		if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 1 {
			t.Fatalf("dead letters at %v; want [1]", got)
		}
		must(t, r.Stop(t))
	})
}

// A commit whose reply was lost, when the position cannot be read back
// at once, is checked again before the batch is written again: it
// committed, so it is not written twice.
func TestExactlyOnceUnknownCommitIsCheckedBeforeTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &flaky{MemStore: txsinktest.NewMemStore[int]()}
		s.LoseCommitReplies(errors.New("connection reset"))
		s.reads = []error{errors.New("connection refused")}
		f, r := run(t, s, txsink.Options[int]{BatchSize: 4}, testkit.NewDeadLetters(), values(0, 8))
		f.WaitCommitted(t, topic, 0, 8)
		sameInts(t, "rows", s.Rows(), seq(0, 8))
		must(t, r.Stop(t))
	})
}

// A commit the store refuses as Invalid (a constraint checked at commit)
// makes the Writer write the batch value by value, as a refused Write
// does: here no value is refused then, and every value is written once.
func TestInvalidCommitIsolatesTheBatch(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := txsinktest.NewMemStore[int]()
				s.FailCommits(sluice.Invalid(errors.New("deferred constraint violated")))
				w := txsink.New[int](s, txsink.Options[int]{ExactlyOnce: eos, BatchSize: 4})
				dl := testkit.NewDeadLetters()
				f := testkit.NewFake()
				if eos {
					f.UseOffsetStore(w, group)
				}
				r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return w.Write(toInt(in))
				}, dl.Option())
				must(t, f.Send(topic, 0, values(0, 4)...))
				must(t, f.Assign(topic, 0))
				f.WaitCommitted(t, topic, 0, 4)
				must(t, f.Send(topic, 0, values(4, 4)...))
				f.WaitCommitted(t, topic, 0, 8)
				sameInts(t, "rows", s.Rows(), seq(0, 8))
				if dl.Len() != 0 {
					t.Fatalf("%d dead letters; want none", dl.Len())
				}
				must(t, r.Stop(t))
			})
		})
	}
}
