package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The tests of this file run a function that ignores its context. Run
// abandons its goroutine and returns; each test then releases the
// function and the synctest bubble waits for every goroutine to exit, so
// nothing outlives the test (goleak, in TestMain, sees nothing).

// ignoringCtx is a stage function that blocks at offset stuck until
// release is closed, whatever its context says.
func ignoringCtx(stuck int64, release <-chan struct{}) func(context.Context, pipeline.Record) error {
	return func(_ context.Context, r pipeline.Record) error {
		if r.Offset == stuck {
			<-release
		}
		return nil
	}
}

// stuckError checks that err is the *StageError of an abandoned function:
// ErrAbandoned, naming stage, partition 0 and offset.
func stuckError(t *testing.T, err error, stage string, offset int64) {
	t.Helper()
	var se *pipeline.StageError
	if !errors.As(err, &se) || !errors.Is(err, pipeline.ErrAbandoned) {
		t.Fatalf("Run returned %v, want a *StageError wrapping ErrAbandoned", err)
	}
	if se.Stage != stage || se.Topic != "t" || se.Partition != 0 || se.Offset != offset {
		t.Fatalf("error names stage %q on %s/%d at %d, want %q on t/0 at %d", se.Stage, se.Topic, se.Partition, se.Offset, stage, offset)
	}
}

// A shutdown whose stage function ignores its context returns at the drain
// timeout plus the exit grace (a quarter of the drain timeout, at least
// 1s) with an
// error naming the stage, the partition and the offset still running, and
// commits exactly up to that record.
func TestShutdownAbandonsAFunctionThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		fake := testkit.NewFake()
		r := testkit.Start(t, fake, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Each(in, ignoringCtx(3, release), stages.Name("write"))
		}, pipeline.WithDrainTimeout(4*time.Second))
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
		if err := fake.Send("t", 0, values(10)...); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // offsets 0-2 done, 3 blocked
		start := time.Now()
		err := r.Stop(t)
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("Run returned after %v, want 5s (drain timeout 4s + exit grace 1s)", took)
		}
		stuckError(t, err, "write", 3)
		if got := fake.Committed("t", 0); got != 3 {
			t.Errorf("committed %d, want 3 (the stuck record)", got)
		}
		close(release)
	})
}

// A revoke whose stage function ignores its context returns at the drain
// timeout plus the exit grace, commits up to the stuck record and stops
// Run with the error naming it.
func TestRevokeAbandonsAFunctionThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Each(in, ignoringCtx(5, release), stages.Name("enrich"))
		}, pipeline.WithDrainTimeout(8*time.Second))
		assignAndSend(h, 10)
		synctest.Wait()
		start := time.Now()
		h.Revoke("t", 0)
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("Revoke returned after %v, want 10s (drain timeout 8s + exit grace 2s)", took)
		}
		if got := h.Committed("t", 0); got != 5 {
			t.Errorf("committed %d, want 5 (the stuck record)", got)
		}
		stuckError(t, h.Wait(), "enrich", 5)
		close(release)
	})
}

// A lost partition whose stage function ignores its context is abandoned
// after the exit grace; nothing is committed for it and Run stops with the
// error naming it.
func TestLossAbandonsAFunctionThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Each(in, ignoringCtx(0, release), stages.Name("write"))
		}, pipeline.WithDrainTimeout(4*time.Second))
		assignAndSend(h, 3)
		synctest.Wait()
		start := time.Now()
		h.Lose("t", 0)
		if took := time.Since(start); took != time.Second {
			t.Errorf("Lose returned after %v, want 1s (the exit grace)", took)
		}
		stuckError(t, h.Wait(), "write", 0)
		if got := h.Committed("t", 0); got != -1 {
			t.Errorf("committed %d for a lost partition, want nothing", got)
		}
		close(release)
	})
}

// An OnClose hook that ignores its context is abandoned once its context
// expired (the drain timeout) plus the exit grace; Run returns an error
// naming the hook (Stage "OnClose", Offset -1) and the hooks registered
// before it do not run.
func TestOnCloseHookThatIgnoresItsContextIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		earlier := false
		fake := testkit.NewFake()
		r := testkit.Start(t, fake, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { earlier = true; return nil })
			p.OnClose(func(context.Context) error { <-release; return nil })
			return stages.Discard(in)
		}, pipeline.WithDrainTimeout(4*time.Second))
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
		if err := fake.Send("t", 0, values(3)...); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		err := r.Stop(t)
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("Run returned after %v, want 5s (the hook's 4s plus the exit grace 1s)", took)
		}
		stuckError(t, err, "OnClose", -1)
		if earlier {
			t.Error("a hook registered before the abandoned one ran while it was still running")
		}
		if got := fake.Committed("t", 0); got != 3 {
			t.Errorf("committed %d, want 3 (every record finished)", got)
		}
		close(release)
	})
}
