package stages_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A partition lost while every worker is busy and more values are queued
// (some workers just started for them): no fn call starts after the
// loss, nothing is committed, and every worker exits.
func TestPoolAttackLossWhileWorkersStart(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers = 3
				var calls atomic.Int32
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(poolOf(keyed, in, workers, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
						calls.Add(1)
						<-ctx.Done()
						return r, ctx.Err()
					}))
				})
				h.Assign("t", 0)
				for range 4 {
					h.Send("t", 0, testkit.Values(9)...)
				}
				synctest.Wait()
				before := calls.Load()
				if before < 1 || before > workers {
					t.Fatalf("%d calls blocked, want 1 to %d", before, workers)
				}
				h.Lose("t", 0)
				synctest.Wait()
				if got := calls.Load(); got != before {
					t.Fatalf("%d calls after the loss, want none: fn was called for values of a lost partition", got-before)
				}
				if got := workersRunning(); got != 0 {
					t.Fatalf("%d workers running after the loss, want 0", got)
				}
				checkCommitted(t, h, -1, "nothing finished")
				stopClean(t, h)
			})
		})
	}
}

// An error or a panic of fn in the second burst, after the workers left
// and started again, stops Run at that value's offset with everything
// before it committed, and no worker outlives the stage.
func TestPoolAttackFailureAfterWorkersRestart(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		for _, panics := range []bool{false, true} {
			name := map[bool]string{false: "Pool", true: "PoolByKey"}[keyed] + map[bool]string{false: "/error", true: "/panic"}[panics]
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const workers, per, bad = 4, 30, 47
					boom := errors.New("boom")
					h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
						return stages.Discard(poolOf(keyed, in, workers, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
							if r.Offset == bad {
								if panics {
									panic(boom)
								}
								return r, boom
							}
							return r, nil
						}))
					})
					h.Assign("t", 0)
					h.Send("t", 0, testkit.Values(per)...)
					h.WaitCommitted("t", 0, per)
					synctest.Wait() // the workers leave
					h.Send("t", 0, testkit.Values(per)...)
					err := h.Wait()
					var se *sluice.StageError
					if !errors.As(err, &se) || se.Offset != bad || !errors.Is(err, boom) {
						t.Fatalf("Run returned %v, want a StageError at offset %d wrapping boom", err, bad)
					}
					checkCommitted(t, h, bad, "every value before the failing one finished")
					synctest.Wait()
					if got := workersRunning(); got != 0 {
						t.Fatalf("%d workers running after Run stopped, want 0", got)
					}
				})
			})
		}
	}
}

// A Limiter and a KeyLock shared by the pools of several partitions
// bound their calls across the consumer while the pools' workers leave
// between bursts and start again: never more than the Limiter's calls at
// once, never two calls of one key at once in any partition, and every
// partition commits every burst.
func TestPoolAttackSharedLimiterAndKeyLockAcrossRestarts(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers, limit, parts, bursts, per = 4, 3, 4, 3, 25
				lim, keys := stages.NewLimiter(limit), stages.NewKeyLock()
				var mu sync.Mutex
				running, peak := 0, 0
				busy := map[string]bool{}
				fn := func(_ context.Context, r sluice.Record) (sluice.Record, error) {
					k := keyOf(r)
					mu.Lock()
					running++
					peak = max(peak, running)
					if running > limit {
						t.Errorf("%d calls at once across partitions, want at most %d", running, limit)
					}
					if busy[k] {
						t.Errorf("key %s called twice at once across partitions", k)
					}
					busy[k] = true
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					running--
					busy[k] = false
					mu.Unlock()
					return r, nil
				}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					opts := []stages.CallOption{lim, stages.LockKey(keys, keyOf)}
					if keyed {
						return stages.Discard(stages.PoolByKey(in, workers, keyOf, fn, opts...))
					}
					return stages.Discard(stages.Pool(in, workers, fn, opts...))
				})
				ps := []int32{0, 1, 2, 3}
				h.Assign("t", ps...)
				for b := range bursts {
					for _, p := range ps {
						h.Send("t", p, testkit.Values(per)...)
					}
					for _, p := range ps {
						h.WaitCommitted("t", p, int64((b+1)*per))
					}
					synctest.Wait()
					if got := workersRunning(); got != 0 {
						t.Fatalf("burst %d: %d workers running with nothing queued, want 0", b, got)
					}
				}
				if peak != limit {
					t.Errorf("at most %d calls ran at once, want %d (the Limiter's)", peak, limit)
				}
				stopClean(t, h)
			})
		})
	}
}
