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
// The second chunk's calls run after the stage saw a whole chunk of them.
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

// Each completes every value as soon as its call returned, however fast
// the calls: while the call for offset 356 waits, every value before it
// is committed.
func TestEachCompletesEveryValueAsItsCallReturns(t *testing.T) {
	held := int64(chunkOf + 100)
	eachRun(t, func(context.Context, sluice.Record) error { return nil }, held, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got != held {
			t.Errorf("committed %d while offset %d's call waits, want %d", got, held, held)
		}
	})
}

// Slow calls (20µs each) complete one by one too: while the call for
// offset 356 waits, every value before it is committed.
func TestEachCompletesSlowCallsOneByOne(t *testing.T) {
	eachRun(t, func(context.Context, sluice.Record) error { time.Sleep(20 * time.Microsecond); return nil }, chunkOf+100, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got != chunkOf+100 {
			t.Errorf("committed %d while offset %d's call waits, want %d", got, chunkOf+100, chunkOf+100)
		}
	})
}

// A value that fails as invalid among fast ones is dead-lettered and the
// values after it complete as their calls return: while offset 356's call
// waits, the partition is committed to 356, past the dead letter at 286,
// and only 286 is dead-lettered.
func TestEachDeadLettersAmongFastCalls(t *testing.T) {
	dls := testkit.NewDeadLetters()
	bad, held := int64(chunkOf+30), int64(chunkOf+100)
	fn := func(_ context.Context, r sluice.Record) error {
		if r.Offset == bad {
			return sluice.Invalid(errors.New("bad record"))
		}
		return nil
	}
	eachRun(t, fn, held, func(h *testkit.Harness) {
		if got := h.Committed("t", 0); got != held {
			t.Errorf("committed %d while offset %d's call waits, want %d (past the dead letter at %d)", got, held, held, bad)
		}
	}, dls.Option())
	if got := dls.Offsets("t", 0); !slices.Equal(got, []int64{bad}) {
		t.Fatalf("dead-lettered %v, want [%d]", got, bad)
	}
}

// A value whose call fails with an error that stops Run leaves the values
// before it completed: the shutdown commits exactly up to it.
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
