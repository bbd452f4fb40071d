package stages_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

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
