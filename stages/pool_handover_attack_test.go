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

// A call blocked on the pool's own goroutine does not hold back the
// chunks after its own: another goroutine takes the pool's input over
// within 2 ms, and the pool still makes up to workers calls at once (the
// blocked one counts). Here each record after the blocked one arrives in
// a chunk of its own (a trickle of single records): the next workers-1
// records are called while it blocks, and once it returns every record
// is called once and committed.
func TestPoolCallsLaterChunksWhileACallBlocksOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 4, 20
		stuck := int64(n)
		release, blocked := make(chan struct{}), make(chan struct{})
		var calledAfter atomic.Int32
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(ctx context.Context, r sluice.Record) (int64, error) {
				if r.Offset == stuck {
					close(blocked)
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				if r.Offset > stuck {
					calledAfter.Add(1)
				}
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n) // fast: the next chunk runs on the pool's goroutine
		h.Send("t", 0, testkit.Values(n + 1)[n:]...)
		<-blocked // the later records come in chunks of their own
		for o := n + 1; o < n+workers; o++ {
			h.Send("t", 0, testkit.Values(o + 1)[o:]...)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := calledAfter.Load(); got != workers-1 {
			t.Errorf("%d records of later chunks called while the call on the pool's goroutine blocks, want %d (Pool makes up to %d calls at once)", got, workers-1, workers)
		}
		checkCommitted(t, h, stuck, "the values before the blocked call returned")
		close(release)
		h.WaitCommitted("t", 0, n+workers)
		stopClean(t, h)
		if got := calledAfter.Load(); got != workers-1 {
			t.Fatalf("%d records after the blocked call were called, want %d", got, workers-1)
		}
	})
}

// The same with a value retried on the pool's goroutine: while it waits
// for its backoff (50 ms) the workers call the rest of its chunk and the
// next chunk (the hedge hands them over within 2 ms), and then every value
// is called once and committed.
func TestPoolCallsLaterChunksWhileAValueRetriesOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 4, 20
		flaky := int64(n)
		failed := make(chan struct{})
		var mu sync.Mutex
		called := map[int64]int{}
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				mu.Lock()
				called[r.Offset]++
				k := called[r.Offset]
				mu.Unlock()
				if r.Offset == flaky && k < 3 {
					if k == 1 {
						close(failed)
					}
					return 0, errors.New("try again")
				}
				return r.Offset, nil
			}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: 50 * time.Millisecond, Max: 50 * time.Millisecond})))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(2 * n)[n:]...)
		<-failed // the next values come in a chunk of their own
		h.Send("t", 0, testkit.Values(3 * n)[2*n:]...)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		count := func(from, to int64) (got int) {
			mu.Lock()
			defer mu.Unlock()
			for o := from; o < to; o++ {
				got += called[o]
			}
			return got
		}
		if got, want := count(flaky+1, 2*n), 2*n-int(flaky)-1; got != want {
			t.Errorf("%d of the %d values after the retried one in its chunk were called 10ms in, want %d", got, want, want)
		}
		if got := count(2*n, 3*n); got != n {
			t.Errorf("%d values of the next chunk were called while the retried value waits, want %d", got, n)
		}
		h.WaitCommitted("t", 0, 3*n)
		stopClean(t, h)
		if got, want := count(flaky+1, 3*n), 3*n-int(flaky)-1; got != want {
			t.Fatalf("%d calls for the %d values after the retried one, want %d (each once)", got, want, want)
		}
	})
}

// The hedge finds the last value of a chunk blocked (every value is
// claimed, none is left for a worker): it still hands the chunk to the
// emitter, so the values before it commit within 2 ms of fake time, and
// no worker is called on.
func TestPoolCommitsBeforeABlockedLastValueOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		stuck := int64(2*n - 1)
		release := make(chan struct{})
		var calls atomic.Int32
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, func(ctx context.Context, r sluice.Record) (int64, error) {
				calls.Add(1)
				if r.Offset == stuck {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(2 * n)[n:]...)
		time.Sleep(2*time.Millisecond + time.Microsecond)
		synctest.Wait()
		got := h.Committed("t", 0)
		close(release)
		h.WaitCommitted("t", 0, 2*n)
		stopClean(t, h)
		if got != stuck {
			t.Errorf("committed %d 2 ms into a blocked last value, want %d", got, stuck)
		}
		if c := calls.Load(); c != 2*n {
			t.Errorf("%d calls, want %d (each value once)", c, 2*n)
		}
	})
}

// A value failing for good on the pool's goroutine hands its chunk to the
// emitter, and the pool's goroutine goes on with the next value, which
// blocks until its context ends (unless the emitter's failure came
// first). The emitter's failure ends that call: Run returns the failure
// at its offset, the values before it committed, and no value after the
// blocked one is called.
func TestPoolEmitterFailureEndsTheCallOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		failing := int64(n + 3)
		var calls atomic.Int32
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, func(ctx context.Context, r sluice.Record) (int64, error) {
				calls.Add(1)
				switch r.Offset {
				case failing:
					return 0, sluice.Permanent(errors.New("boom"))
				case failing + 1:
					<-ctx.Done()
					return 0, ctx.Err()
				}
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(2 * n)[n:]...)
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Offset != failing {
			t.Fatalf("Run returned %v, want a StageError at offset %d", err, failing)
		}
		checkCommitted(t, h, failing, "every value before the failing one returned")
		// The call after the failing value is made unless the emitter's
		// failure ended the partition's context first; none after it is.
		if c := calls.Load(); c < int32(failing+1) || c > int32(failing+2) {
			t.Errorf("%d calls, want %d or %d (none after the call the failure ended)", c, failing+1, failing+2)
		}
	})
}

// As above, but the call after the failing value ignores its context.
// A function that ignores its context is abandoned past the exit grace
// (docs/misuse.md): Run must still return, with the failure, and the
// values before it committed. (The pool reports the emitter's failure
// only once every call it started returned, so nothing stops the
// partition and nothing abandons the call: Run never returns. With the
// call on a worker, before the pool made calls on its own goroutine, the
// same happens.)
func TestPoolRunReturnsAfterAFailureWhileACallIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		failing := int64(n + 3)
		release := make(chan struct{})
		defer close(release) // also when Wait fails the test
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (int64, error) {
				switch r.Offset {
				case failing:
					return 0, sluice.Permanent(errors.New("boom"))
				case failing + 1:
					<-release
				}
				return r.Offset, nil
			}))
		}, pipeline.WithDrainTimeout(4*time.Second))
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(2 * n)[n:]...)
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Offset != failing {
			t.Fatalf("Run returned %v, want a StageError at offset %d", err, failing)
		}
		checkCommitted(t, h, failing, "every value before the failing one returned")
	})
}

// A revoke whose drain times out while a call on the pool's goroutine
// blocks until its context ends: the values before it are committed
// exactly, none after it, and Run goes on (the revoke returns).
func TestPoolDrainTimeoutDuringACallOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		stuck := int64(n + 10)
		var calls atomic.Int32
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, func(ctx context.Context, r sluice.Record) (int64, error) {
				calls.Add(1)
				if r.Offset == stuck {
					<-ctx.Done()
					return 0, ctx.Err()
				}
				return r.Offset, nil
			}))
		}, pipeline.WithDrainTimeout(time.Second))
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(2 * n)[n:]...)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		checkCommitted(t, h, stuck, "the values before the blocked call returned")
		_ = h.Fake().Revoke("t", 0)
		checkCommitted(t, h, stuck, "the blocked call never returned a value")
		if c := calls.Load(); c != 2*n {
			t.Errorf("%d calls, want %d (each value once)", c, 2*n)
		}
		stopClean(t, h)
	})
}
