package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The tests of this file run a function that ignores its context. Run
// abandons its goroutine and returns; each test then releases the
// function and the synctest bubble waits for every goroutine to exit, so
// nothing outlives the test (goleak, in TestMain, sees nothing).

// stuckError checks that err is the *sluice.StageError of an abandoned function:
// ErrAbandoned, naming stage, partition 0 and offset.
func stuckError(t *testing.T, err error, stage string, offset int64) {
	t.Helper()
	var se *sluice.StageError
	if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) {
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
		r := testkit.Start(t, fake, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, ignoringCtx(3, release), stages.Name("write"))
		}, pipeline.WithDrainTimeout(4*time.Second))
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
		if err := fake.Send("t", 0, testkit.Values(10)...); err != nil {
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

// A revoke or a loss whose stage function ignores its context returns
// once the function is abandoned and stops Run with the error naming the
// stuck record: a revoke at the drain timeout plus the exit grace,
// committing up to that record; a loss after the exit grace, committing
// nothing for the partition.
func TestRevokeOrLossAbandonsAFunctionThatIgnoresItsContext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n         int   // records sent
		stuck     int64 // the offset whose function ignores its context
		drain     time.Duration
		end       func(h *testkit.Harness)
		took      time.Duration // drain timeout + exit grace, or the exit grace alone
		committed int64
	}{
		{"revoke commits up to the stuck record", 10, 5, 8 * time.Second,
			func(h *testkit.Harness) { h.Revoke("t", 0) }, 10 * time.Second, 5},
		{"loss commits nothing", 3, 0, 4 * time.Second,
			func(h *testkit.Harness) { h.Lose("t", 0) }, time.Second, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, ignoringCtx(tc.stuck, release), stages.Name("write"))
				}, pipeline.WithDrainTimeout(tc.drain))
				assignAndSend(h, tc.n)
				synctest.Wait()
				start := time.Now()
				tc.end(h)
				if took := time.Since(start); took != tc.took {
					t.Errorf("returned after %v, want %v", took, tc.took)
				}
				if got := h.Committed("t", 0); got != tc.committed {
					t.Errorf("committed %d, want %d", got, tc.committed)
				}
				stuckError(t, h.Wait(), "write", tc.stuck)
				close(release)
			})
		})
	}
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
		r := testkit.Start(t, fake, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { earlier = true; return nil })
			p.OnClose(func(context.Context) error { <-release; return nil })
			return stages.Discard(in)
		}, pipeline.WithDrainTimeout(4*time.Second))
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
		if err := fake.Send("t", 0, testkit.Values(3)...); err != nil {
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
