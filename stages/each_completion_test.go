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

// chunkOf is one chunk of the runtime's input edge (pipeline's default).
const chunkOf = 256

// eachRun runs Each with fn on partition t/0 in a synctest bubble: it
// sends a first chunk of records (all processed before the test goes on),
// then a second one, whose record at offset held waits at a gate; check
// runs while it waits, then the gate opens and every record must commit.
func eachRun(t *testing.T, fn func(context.Context, sluice.Record) error, held int64, check func(h *testkit.Harness), opts ...pipeline.Option) {
	synctest.Test(t, func(t *testing.T) {
		g := holdOffset(held)
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, g.then(fn))
		}, opts...)
		h.Assign("t", 0)
		send := func(n int) {
			vals := make([][]byte, n)
			for i := range vals {
				vals[i] = []byte("v")
			}
			h.Send("t", 0, vals...)
		}
		send(chunkOf)
		h.WaitCommitted("t", 0, chunkOf)
		send(chunkOf)
		<-g.closed
		synctest.Wait()
		check(h)
		close(g.open)
		h.WaitCommitted("t", 0, 2*chunkOf)
		if err := h.Stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := h.Committed("t", 0); got != 2*chunkOf {
			t.Fatalf("committed %d after the stop, want %d", got, 2*chunkOf)
		}
	})
}

// Each's calls that return fast (no time passes in the bubble) complete
// in groups of 64 after the first chunk: while the call for offset 356
// waits, the values before it are committed only up to the end of their
// last full group (or of the chunk before), not each one: at least
// 356-63, never 356.
func TestEachCompletesFastCallsInGroups(t *testing.T) {
	held := int64(chunkOf + 100)
	eachRun(t, func(context.Context, sluice.Record) error { return nil }, held, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got < held-63 || got >= held {
			t.Errorf("committed %d while offset %d's call waits, want %d to %d (completed in groups of 64)", got, held, held-63, held-1)
		}
	})
}

// Each's calls that take time (20µs each, over the 10µs under which calls
// count as fast) complete one by one: while the call for offset 356
// waits, every value before it is committed.
func TestEachCompletesSlowCallsOneByOne(t *testing.T) {
	eachRun(t, func(context.Context, sluice.Record) error { time.Sleep(20 * time.Microsecond); return nil }, chunkOf+100, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got != chunkOf+100 {
			t.Errorf("committed %d while offset %d's call waits, want %d", got, chunkOf+100, chunkOf+100)
		}
	})
}

// A value that fails as invalid in the middle of a group is dead-lettered
// after the values of the group before it completed (a dead letter waits
// for the values before it): while offset 356's call waits, the partition
// is committed past the invalid 286, and only 286 is dead-lettered.
func TestEachDeadLettersInsideAGroup(t *testing.T) {
	dls := testkit.NewDeadLetters()
	bad, held := int64(chunkOf+30), int64(chunkOf+100)
	fn := func(_ context.Context, r sluice.Record) error {
		if r.Offset == bad {
			return sluice.Invalid(errors.New("bad record"))
		}
		return nil
	}
	eachRun(t, fn, held, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got <= bad || got > held {
			t.Errorf("committed %d while offset %d's call waits, want past the dead letter at %d", got, held, bad)
		}
	}, dls.Option())
	if got := dls.Offsets("t", 0); !slices.Equal(got, []int64{bad}) {
		t.Fatalf("dead-lettered %v, want [%d]", got, bad)
	}
}

// A value whose call fails with an error that stops Run, in the middle of
// a group, leaves the values before it completed: the shutdown commits
// exactly up to it.
func TestEachStopsWithTheValuesBeforeAFailureCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := int64(chunkOf + 30)
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == bad {
					return errors.New("boom")
				}
				return nil
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(chunkOf)...)
		h.WaitCommitted("t", 0, chunkOf)
		h.Send("t", 0, testkit.Values(chunkOf)...)
		var se *sluice.StageError
		if err := h.Wait(); !errors.As(err, &se) || se.Offset != bad {
			t.Fatalf("Run returned %v, want a StageError at offset %d", err, bad)
		}
		checkCommitted(t, h, bad, "every value before the failed one returned")
	})
}
