package stages_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

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
