package stages_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/goroutinetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A Pool runs workers calls at once, never more, even when its values
// arrive in one chunk: the worker that takes a chunk posts it again for
// an idle worker while values are left, until every worker is busy.
func TestPoolRunsWorkersCallsAtOnceFromOneChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 4, 40
		var running, peak atomic.Int32
		release := make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				cur := running.Add(1)
				for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
				}
				<-release
				running.Add(-1)
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...) // one delivery: one chunk
		// The first call runs on the pool's own goroutine (its calls are
		// fast until one is not); the workers join once it ran for two
		// milliseconds at most.
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if got := running.Load(); got != workers {
			t.Fatalf("%d calls run at once with every worker blocked, want %d", got, workers)
		}
		close(release)
		h.WaitCommitted("t", 0, n)
		if got := peak.Load(); got != workers {
			t.Fatalf("at most %d calls ran at once, want %d", got, workers)
		}
	})
}

// A slow value does not hold up the values after it in its chunk: workers
// claim a chunk's values one at a time, so while one call blocks, the
// other workers take every other value (a chunk cut into one fixed range
// per worker left the blocked value's range waiting behind it: 56 of 63).
func TestPoolSlowValueDoesNotHoldItsNeighbours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 8, 64
		var calls atomic.Int64
		gate := make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				if r.Offset == 0 {
					<-gate // the first worker holds value 0 while a helper joins
				}
				calls.Add(1)
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		time.Sleep(2 * time.Millisecond) // the most a blocked call holds its neighbours
		synctest.Wait()
		// The pool's goroutine is blocked on value 0; the worker the
		// hedge posted (and the helpers it posted) claimed and finished
		// every other value.
		if got := calls.Load(); got != n-1 {
			t.Fatalf("%d values done while value 0 blocks, want %d", got, n-1)
		}
		close(gate)
		h.WaitCommitted("t", 0, n)
	})
}

// workersRunning counts the goroutines running a Pool worker's loop.
func workersRunning() int { return goroutinetest.Count("stages.(*workerPool[...]).work(") }

// A Pool starts its workers when values arrive and lets them go once it
// has nothing to do, so an idle partition holds no worker goroutine; the
// next values start them again, and every value is still processed.
func TestPoolIdleHoldsNoWorkers(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "Pool", true: "PoolByKey"}[keyed]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers, n = 8, 200
				block := make(chan struct{})
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					fn := func(_ context.Context, r sluice.Record) (int64, error) {
						if r.Offset >= n {
							<-block
						}
						return r.Offset, nil
					}
					if keyed {
						return stages.Discard(stages.PoolByKey(in, workers, func(r sluice.Record) string { return string(r.Value) }, fn))
					}
					return stages.Discard(stages.Pool(in, workers, fn))
				})
				h.Assign("t", 0)
				if got := workersRunning(); got != 0 {
					t.Fatalf("%d workers before any value, want 0", got)
				}
				h.Send("t", 0, testkit.Values(n)...)
				h.WaitCommitted("t", 0, n)
				synctest.Wait()
				if got := workersRunning(); got != 0 {
					t.Fatalf("%d workers running with nothing to do, want 0", got)
				}
				// Values that block keep their workers until released.
				h.Send("t", 0, testkit.Values(2 * n)[n:]...)
				time.Sleep(2 * time.Millisecond) // a blocked call on the pool's goroutine has the workers join
				synctest.Wait()
				if got := workersRunning(); got < 1 || got > workers {
					t.Fatalf("%d workers running with %d blocked values, want 1 to %d", got, n, workers)
				}
				close(block)
				h.WaitCommitted("t", 0, 2*n)
				synctest.Wait()
				if got := workersRunning(); got != 0 {
					t.Fatalf("%d workers running after the second run of values, want 0", got)
				}
			})
		})
	}
}
