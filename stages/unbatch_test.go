package stages_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// deadOffsets records the offsets of dead-lettered records.
type deadOffsets struct {
	mu   sync.Mutex
	offs []int64
}

func (d *deadOffsets) deadLetter(_ context.Context, dl sluice.DeadLetter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.offs = append(d.offs, dl.Record.Offset)
	return nil
}

func (d *deadOffsets) list() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.offs)
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
		var dead deadOffsets
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			elems := stages.Unbatch(stages.Batch(in, 3, time.Second))
			return stages.Discard(stages.Map(elems, failAt(1, sluice.Invalid(errors.New("bad")))))
		}, pipeline.WithDeadLetter(dead.deadLetter))
		h.Assign("t", 0)
		h.Send("t", 0, nValues(3)...)
		h.WaitCommitted("t", 0, 3)
		if got := dead.list(); !slices.Equal(got, []int64{1}) {
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
		var dead deadOffsets
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			reversed := stages.Map(stages.Batch(in, 3, time.Second), func(_ context.Context, b []sluice.Record) ([]sluice.Record, error) {
				out := slices.Clone(b)
				slices.Reverse(out)
				return out, nil
			})
			elems := stages.Unbatch(reversed)
			return stages.Discard(stages.Map(elems, failAt(2, sluice.Invalid(errors.New("bad")))))
		}, pipeline.WithDeadLetter(dead.deadLetter))
		h.Assign("t", 0)
		h.Send("t", 0, nValues(3)...)
		h.WaitCommitted("t", 0, 3)
		if got := dead.list(); !slices.Equal(got, []int64{0, 1, 2}) {
			t.Fatalf("dead-lettered offsets %v, want [0 1 2]", got)
		}
	})
}
