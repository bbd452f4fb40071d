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

// The Pool doc: when one call on the goroutine taking the pool's input
// has run for 1 to 2 ms, "another goroutine takes the next chunks in (a
// blocked call, or a retry's backoff, holds back no input)". Here the
// chunk's first call is slow (10 µs), so a worker joins, and the pool's
// goroutine then blocks on the second value for 60 ms while the worker
// calls the 38 values after it, 1 ms each. A chunk of one fast record
// arrives at 5 ms. It is to be taken in while the call blocks, so that
// the worker goes on with it once done with the first chunk's values, as
// the workers did before the pool made calls on its own goroutine: the
// pool must not leave its only free worker idle while a chunk it was sent
// 33 ms before waits.
func TestPoolTakesTheNextChunkInWhileWorkersFinishABlockedCallsChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 2, 40
		var mu sync.Mutex
		began, ended := map[int64]time.Time{}, map[int64]time.Time{}
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				mu.Lock()
				began[r.Offset] = time.Now()
				mu.Unlock()
				switch {
				case r.Offset == 0:
					time.Sleep(10 * time.Microsecond)
				case r.Offset == 1:
					time.Sleep(60 * time.Millisecond)
				case r.Offset < n:
					time.Sleep(time.Millisecond)
				}
				mu.Lock()
				ended[r.Offset] = time.Now()
				mu.Unlock()
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		start := time.Now()
		h.Send("t", 0, testkit.Values(n)...) // one chunk
		time.Sleep(5 * time.Millisecond)
		h.Send("t", 0, testkit.Values(n + 1)[n:]...)
		h.WaitCommitted("t", 0, n+1)
		mu.Lock()
		defer mu.Unlock()
		last := ended[n-1].Sub(start)
		next := began[n].Sub(start)
		t.Logf("offset %d ended at %v, offset %d began at %v", n-1, last, n, next)
		if next > last {
			t.Errorf("the record sent at 5 ms was called at %v, %v after the worker finished the blocked call's chunk (%v): the pool took it in only then, want at once", next, next-last, last)
		}
	})
}
