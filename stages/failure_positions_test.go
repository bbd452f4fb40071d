package stages_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A FlatMap failure must still complete the records before it that
// produced no output, so the partition commits up to the failing offset.
func TestFlatMapFailureCompletesEmptyOutputsBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]int64, error) {
				if r.Offset == 2 {
					return nil, sluice.Permanent(errors.New("boom"))
				}
				return nil, nil // offsets 0 and 1 expand to nothing
			})
			return stages.Discard(out)
		})
		failsAt(t, h, 3, 2, false)
		checkCommitted(t, h, 2, "offsets 0 and 1 finished before the failure")
	})
}

// A panic in Pool's ByKey function must stop Run with the record's
// position and leave no goroutine of the pool behind (synctest fails on a
// leaked, blocked goroutine); the records before it, in the same chunk,
// still complete.
func TestPoolKeyPanicReportsPositionWithoutLeaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.PoolByKey(in, 3, func(r sluice.Record) string {
				if r.Offset == 3 {
					panic("bad key")
				}
				return string(r.Value)
			}, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil })
			return stages.Discard(out)
		})
		failsAt(t, h, 5, 3, true)
		checkCommitted(t, h, 3, "offsets 0 to 2 finished before the panic")
	})
}

// A Batch Weight function that panics reports the value's position, and
// the partial batch before it is still emitted and completes.
func TestBatchWeightPanicReportsPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got [][]int64
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.BatchByWeight(in, 10, time.Second, func(r sluice.Record) int {
				if r.Offset == 3 {
					panic("bad weight")
				}
				return 1
			})
			return stages.Each(out, func(_ context.Context, b []sluice.Record) error {
				offs := make([]int64, len(b))
				for i, r := range b {
					offs[i] = r.Offset
				}
				got = append(got, offs)
				return nil
			})
		})
		failsAt(t, h, 5, 3, true)
		if c := h.Committed("t", 0); c != 3 || len(got) != 1 || !slices.Equal(got[0], []int64{0, 1, 2}) {
			t.Fatalf("committed %d after batches %v, want 3 after [[0 1 2]]", c, got)
		}
	})
}

// A SharedBatcher Weight function that panics reports the value's
// position, and the values before it are still written and complete.
func TestSharedBatcherWeightPanicReportsPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		b := stages.NewSharedBatcherByWeight(w.write, 10, time.Minute, func(v string) int {
			if v == "0:3" {
				panic("bad weight")
			}
			return 1
		})
		h := sharedHarness(t, b)
		failsAt(t, h, 5, 3, true)
		if c, got := h.Committed("t", 0), w.list(); c != 3 || !slices.EqualFunc(got, [][]string{{"0:0", "0:1", "0:2"}}, slices.Equal) {
			t.Fatalf("committed %d after batches %v, want 3 after [[0:0 0:1 0:2]]", c, got)
		}
	})
}

// When Pool's emitter fails, the workers must not go on calling (and
// retrying) fn for every value still queued: Run must stop about when the
// failing value exhausted its retries, not after the whole backlog did.
func TestPoolFailureDoesNotRetryTheBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.Pool(in, 2, func(ctx context.Context, r sluice.Record) (int64, error) {
				if r.Offset == 0 {
					return 0, sluice.Permanent(errors.New("boom"))
				}
				if err := ctx.Err(); err != nil {
					return 0, err // transient in the retry policy's eyes
				}
				time.Sleep(time.Second)
				return r.Offset, ctx.Err()
			}, stages.Retry(sluice.RetryPolicy{Attempts: 5, Initial: time.Second, Max: time.Second}))
			return stages.Discard(out)
		})
		h.Assign("t", 0)
		start := time.Now()
		h.Send("t", 0, testkit.Values(200)...)
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Offset != 0 {
			t.Fatalf("Run returned %v, want a StageError at offset 0", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("Run took %v to stop after offset 0 failed at once: the pool kept working through its backlog", took)
		}
	})
}

// A shared batch that fails as Invalid dead-letters the values of every
// partition in it, including partitions lost meanwhile: that must not
// send on the lost graph's closed dead-letter queue.
func TestSharedBatchInvalidWithLostPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lost = 16
		var dead atomic.Int32
		b := stages.NewSharedBatcher(func(_ context.Context, batch []string) error {
			return sluice.Invalid(errors.New("rejected"))
		}, lost+1, time.Minute)
		h := sharedHarness(t, b, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
			dead.Add(1)
			return nil
		}))
		parts := make([]int32, lost+1)
		for i := range parts {
			parts[i] = int32(i)
		}
		h.Assign("t", parts...)
		for p := int32(1); p <= lost; p++ {
			h.Send("t", p, []byte("x"))
		}
		synctest.Wait()
		h.Lose("t", parts[1:]...)
		// y fills the batch, unless a lost partition's Feed stage took the
		// drain path and wrote the batch on its way out; then y is written
		// alone after maxWait. Either way, the write rejects it.
		h.Send("t", 0, []byte("y"))
		h.WaitCommitted("t", 0, 1)
		if err := h.Stop(); err != nil {
			t.Fatalf("Run returned %v", err)
		}
	})
}

// deadOffsets returns the offsets of dead, in the order they arrived.
func deadOffsets(dead *testkit.DeadLetters) []int64 {
	var offs []int64
	for _, dl := range dead.Records() {
		offs = append(offs, dl.Record.Offset)
	}
	return offs
}

// failAt returns a check that fails the record at offset bad with err.
func failAt(bad int64, err error) func(context.Context, sluice.Record) (sluice.Record, error) {
	return func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		if r.Offset == bad {
			return r, err
		}
		return r, nil
	}
}

// Right after a Batch, each element carries its own record's ticket: one
// invalid element dead-letters only its record.
func TestUnbatchAfterBatchDeadLettersOnlyTheInvalidElementsRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			elems := stages.Unbatch(stages.Batch(in, 3, time.Second))
			return stages.Discard(stages.Map(elems, failAt(1, sluice.Invalid(errors.New("bad")))))
		}, dead.Option())
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(3)...)
		h.WaitCommitted("t", 0, 3)
		if got := deadOffsets(dead); !slices.Equal(got, []int64{1}) {
			t.Fatalf("dead-lettered offsets %v, want [1]", got)
		}
	})
}

// Right after a Batch, an element's failure names its own record, and the
// elements before it commit.
func TestUnbatchAfterBatchFailsAtTheElementsOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			elems := stages.Unbatch(stages.Batch(in, 3, time.Second))
			return stages.Discard(stages.Map(elems, failAt(1, sluice.Permanent(errors.New("boom")))))
		})
		failsAt(t, h, 3, 1, false)
		checkCommitted(t, h, 1, "offset 0 finished")
	})
}

// After a stage that builds new slices from Batch's (a bulk lookup may
// return its rows in any order), Unbatch cannot know which record an
// element came from: every element stands for the whole batch, so one
// invalid element dead-letters all of its records, and nothing is lost.
func TestUnbatchAfterAMappedBatchDeadLettersTheWholeBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			reversed := stages.Map(stages.Batch(in, 3, time.Second), func(_ context.Context, b []sluice.Record) ([]sluice.Record, error) {
				out := slices.Clone(b)
				slices.Reverse(out)
				return out, nil
			})
			elems := stages.Unbatch(reversed)
			return stages.Discard(stages.Map(elems, failAt(2, sluice.Invalid(errors.New("bad")))))
		}, dead.Option())
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(3)...)
		h.WaitCommitted("t", 0, 3)
		if got := deadOffsets(dead); !slices.Equal(got, []int64{0, 1, 2}) {
			t.Fatalf("dead-lettered offsets %v, want [0 1 2]", got)
		}
	})
}
