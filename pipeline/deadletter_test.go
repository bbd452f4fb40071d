package pipeline_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A later stage finds offset 3 invalid after an earlier stage found
// offset 5 invalid: 3 still reaches the destination first.
func TestDeadLettersArriveInOffsetOrderAcrossStages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		found5 := make(chan struct{})
		got := deadLettered(t, 8, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			checked := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				if r.Offset == 5 {
					close(found5)
					return r, sluice.Invalid(errors.New("bad header"))
				}
				return r, nil
			}, stages.Name("check"))
			return stages.Each(checked, func(ctx context.Context, r sluice.Record) error {
				if r.Offset == 3 {
					<-found5 // offset 5 was found invalid first
					return sluice.Invalid(errors.New("bad body"))
				}
				return nil
			}, stages.Name("write"))
		})
		if got != "[3 5]" {
			t.Fatalf("dead letters %s, want [3 5] (offset order)", got)
		}
	})
}

// Invalid batches of two branches interleave by offset: dead letters go
// out record by record in offset order, not batch by batch.
func TestDeadLettersOfInterleavedBatchesArriveInOffsetOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := deadLettered(t, 4, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			branches := stages.Route(in, 2, func(r sluice.Record) int { return int(r.Offset % 2) })
			var ends []pipeline.End
			for _, b := range branches {
				ends = append(ends, stages.Each(stages.Batch(b, 2, 0), func(context.Context, []sluice.Record) error {
					return sluice.Invalid(errors.New("bad batch"))
				}))
			}
			return pipeline.All(ends...)
		})
		if got != "[0 1 2 3]" {
			t.Fatalf("dead letters %s, want [0 1 2 3]", got)
		}
	})
}

// A dead letter waits only for the records before it: a slow record after
// it does not hold it back.
func TestADeadLetterDoesNotWaitForLaterRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		delivered := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			nums := stages.Map(in, parse)
			return stages.Each(nums, func(ctx context.Context, n int) error {
				if n == 5 {
					<-delivered // held until the dead letter of offset 2 is out
				}
				return nil
			})
		}, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
			if dl.Record.Offset == 2 {
				close(delivered)
			}
			return nil
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("0"), []byte("1"), []byte("x"), []byte("3"), []byte("4"), []byte("5"), []byte("6"))
		h.WaitCommitted("t", 0, 7)
	})
}

// Shutting down while the dead-letter destination fails interrupts the
// retries; Run then returns an error naming the records that were not
// dead-lettered, which stay uncommitted.
func TestShutdownWhileDeadLettersFailReturnsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := make(chan struct{}, 1)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse, stages.Name("parse")))
		}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
			select {
			case called <- struct{}{}:
			default:
			}
			return errFlaky // transient: retried with backoff
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"), []byte("2"), []byte("y"), []byte("3"))
		<-called
		synctest.Wait() // offset 3 is queued too; offset 1 waits for its first retry
		err := h.Stop()
		var se *sluice.StageError
		if !errors.Is(err, sluice.ErrNotDeadLettered) || !errors.Is(err, errFlaky) || !errors.As(err, &se) {
			t.Fatalf("Stop returned %v, want a *StageError wrapping ErrNotDeadLettered and the destination's error", err)
		}
		if se.Stage != "parse" || se.Offset != 1 || !strings.Contains(err.Error(), "offsets [3]") {
			t.Fatalf("error names %q at %d: %v; want parse at offset 1, and offset 3 also not dead-lettered", se.Stage, se.Offset, err)
		}
		checkCommitted(t, h, 1, "(nothing from the record not dead-lettered on)")
	})
}

// A revoke interrupts failing dead-letter retries without stopping Run:
// the record stays uncommitted and is dead-lettered by the next
// assignment.
func TestRevokeWhileDeadLettersFailLeavesTheRecordForTheNextOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var broken atomic.Bool
		broken.Store(true)
		called := make(chan struct{}, 1)
		dead := testkit.NewDeadLetters()
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse))
		}, pipeline.WithDeadLetter(func(ctx context.Context, dl sluice.DeadLetter) error {
			if broken.Load() {
				select {
				case called <- struct{}{}:
				default:
				}
				return errFlaky
			}
			return dead.Func()(ctx, dl)
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"), []byte("2"))
		<-called
		h.Revoke("t", 0)
		checkCommitted(t, h, 1, "after the revoke")
		broken.Store(false)
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 3)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop returned %v; a revoke must not stop Run", err)
		}
		if got := deadOffsets(dead); got != "[1]" {
			t.Fatalf("dead letters %s, want [1]", got)
		}
	})
}

// A partition lost while its dead letters' outcomes are outstanding (one
// of them failing) commits nothing; assigned again to the same Run, its
// records are dead-lettered again and commit once stored, and Run goes
// on.
func TestDeadLettersOutstandingAtLossThenReassigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startDeferring(t, 3)
		lost := make(chan struct{})
		go func() {
			defer close(lost)
			h.Lose("t", 0)
		}()
		synctest.Wait()
		d.settle(nil, 0)
		d.settle(errFlaky, 1)
		d.settle(nil, 2)
		<-lost
		expect(t, h, d, "0 1 2", -1)
		h.Assign("t", 0)
		synctest.Wait()
		if got := d.String(); got != "0 1 2 0 1 2" {
			t.Fatalf("dead-letter calls %q, want %q", got, "0 1 2 0 1 2")
		}
		d.settle(nil, 0, 1, 2)
		h.WaitCommitted("t", 0, 3)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop returned %v", err)
		}
	})
}

// checkedDestination is a dead-letter destination of a named function
// type whose start check fails, as a Kafka producer's does for a missing
// topic.
type checkedDestination func(context.Context, sluice.DeadLetter) error

var errNoTopic = errors.New("the dead-letter topic does not exist")

func (checkedDestination) CheckStart(context.Context) error { return errNoTopic }

// startedSource records whether Run started it.
type startedSource struct{ started bool }

func (s *startedSource) Run(ctx context.Context, g sluice.Group) error {
	s.started = true
	<-ctx.Done()
	return nil
}

func discard(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(in)
}

// Run calls the dead-letter destination's CheckStart before the source
// starts and returns its error; the source never runs.
func TestDeadLetterStartCheckFailsRunBeforeTheSourceStarts(t *testing.T) {
	dest := checkedDestination(func(context.Context, sluice.DeadLetter) error { return nil })
	src := &startedSource{}
	err := pipeline.Run(context.Background(), src, discard, pipeline.WithDeadLetter(dest))
	if !errors.Is(err, errNoTopic) {
		t.Fatalf("Run = %v, want the start check's error", err)
	}
	if src.started {
		t.Error("the source was started although the start check failed")
	}
}

// A later WithDeadLetter replaces the destination and its check; a plain
// function has none.
func TestDeadLetterStartCheckGoesWithItsDestination(t *testing.T) {
	dest := checkedDestination(func(context.Context, sluice.DeadLetter) error { return nil })
	plain := func(context.Context, sluice.DeadLetter) error { return nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := &startedSource{}
	if err := pipeline.Run(ctx, src, discard, pipeline.WithDeadLetter(dest), pipeline.WithDeadLetter(plain)); err != nil {
		t.Fatalf("Run = %v, want nil: the plain function replaced the checked destination", err)
	}
	if !src.started {
		t.Error("the source was not started")
	}
}

// liveHeapGrowth runs 100000 records through build, 1000 at a time, and
// returns how much the live heap grew over the last 80000 (the Fake's
// log of the records included).
func liveHeapGrowth(t *testing.T, build pipeline.Builder, opts ...pipeline.Option) int64 {
	h := testkit.New(t, build, opts...)
	h.Assign("t", 0)
	vals := testkit.Values(1000)
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var base int64
	sent := int64(0)
	for round := 1; round <= 100; round++ {
		h.Send("t", 0, vals...)
		sent += int64(len(vals))
		h.WaitCommitted("t", 0, sent)
		if round == 20 {
			base = live()
		}
	}
	grown := live() - base
	stopClean(t, h)
	return grown
}

// A long run of invalid records, dead-lettered with deferred outcomes,
// grows the live heap no more than the same run of valid records (the
// Fake keeps every record it was sent), give or take 2 MiB.
func TestDeadLetterLongInvalidRunHasBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	valid := liveHeapGrowth(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) { return r, nil }))
	})
	d := newAsyncDest()
	d.noFail = true
	d.noRecord = true
	invalid := liveHeapGrowth(t, invalidEverything, pipeline.WithDeadLetter(d.fn))
	t.Logf("live heap growth over 80000 records: valid %d, invalid %d", valid, invalid)
	if invalid-valid > 2<<20 {
		t.Errorf("80000 dead letters grew the live heap by %d bytes more than 80000 valid records", invalid-valid)
	}
}

// benchDeadLetters pushes b.N records through Map → Discard on one
// partition, every record invalid when invalid is set, with dest as the
// dead-letter destination, and waits until all are committed: the
// runtime's own cost per dead letter, without a client.
func benchDeadLetters(b *testing.B, invalid bool, dest func(context.Context, sluice.DeadLetter) error) {
	bad := sluice.Invalid(errors.New("bad"))
	enginetest.BenchCommitted(b, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if invalid {
				return r, bad
			}
			return r, nil
		}))
	}, pipeline.WithDeadLetter(dest))
}

// readyOutcome is a deferred dead letter already delivered.
type readyOutcome struct{}

func (readyOutcome) Ready() bool { return true }
func (readyOutcome) Wait() error { return nil }

// BenchmarkDeadLetters compares every record valid, every record invalid
// with a destination that returns at once, and every record invalid with
// a destination that defers its outcome (engine.DeferDeadLetter, as the
// Kafka destinations do), which is ready at once.
func BenchmarkDeadLetters(b *testing.B) {
	ok := func(context.Context, sluice.DeadLetter) error { return nil }
	deferred := func(ctx context.Context, _ sluice.DeadLetter) error {
		if !engine.DeferDeadLetter(ctx, readyOutcome{}) {
			return errors.New("not deferred")
		}
		return nil
	}
	b.Run("valid", func(b *testing.B) { benchDeadLetters(b, false, ok) })
	b.Run("invalid", func(b *testing.B) { benchDeadLetters(b, true, ok) })
	b.Run("invalid-deferred", func(b *testing.B) { benchDeadLetters(b, true, deferred) })
}
