package stages_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
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

// onWorker reports whether the calling goroutine is one of a Pool's
// workers (rather than the pool's own goroutine).
func onWorker() bool {
	buf := make([]byte, 64<<10)
	return strings.Contains(string(buf[:runtime.Stack(buf, false)]), "stages.(*workerPool[...]).work(")
}

// callLog records, per offset, whether its call ran on a worker.
type callLog struct {
	mu       sync.Mutex
	onWorker map[int64]bool
}

func (l *callLog) called(off int64) {
	w := onWorker()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.onWorker == nil {
		l.onWorker = map[int64]bool{}
	}
	l.onWorker[off] = w
}

func (l *callLog) workers(from, to int64) (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := from; o < to; o++ {
		if l.onWorker[o] {
			n++
		}
	}
	return n
}

// Fast calls (no time passes in a synctest bubble) run on the pool's own
// goroutine: no value of a steady flow is handed to a worker.
func TestPoolFastCallsRunOnThePoolsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		var l callLog
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 8, func(_ context.Context, r sluice.Record) (int64, error) {
				l.called(r.Offset)
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		for i := 0; i < n; i += 50 {
			h.Send("t", 0, testkit.Values(i + 50)[i:]...)
		}
		h.WaitCommitted("t", 0, n)
		if w := l.workers(0, n); w != 0 {
			t.Fatalf("%d of %d fast calls ran on a worker, want 0", w, n)
		}
	})
}

// Slow calls have the workers join at once: the peak of calls at once
// reaches the pool's workers, and the run takes about n/workers calls'
// time rather than n. Once the calls are fast again, the next chunk runs
// on the pool's goroutine again.
func TestPoolSlowCallsGoToWorkersAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, slow, fast = 4, 40, 100
		var running, peak atomic.Int32
		var l callLog
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				l.called(r.Offset)
				if r.Offset < slow {
					cur := running.Add(1)
					for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
					}
					time.Sleep(time.Millisecond)
					running.Add(-1)
				}
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		start := time.Now()
		h.Send("t", 0, testkit.Values(slow)...) // one chunk
		h.WaitCommitted("t", 0, slow)
		took := time.Since(start)
		if got := peak.Load(); got != workers {
			t.Fatalf("at most %d slow calls ran at once, want %d", got, workers)
		}
		if most := (slow/workers + 2) * time.Millisecond; took > most {
			t.Fatalf("%d slow calls of 1ms on %d workers took %v, want at most %v", slow, workers, took, most)
		}
		if w := l.workers(0, slow); w == 0 {
			t.Fatal("no slow call ran on a worker")
		}
		// The first chunk of fast calls after the slow ones still goes to
		// the workers (their pace says fast), the next runs on the pool.
		h.Send("t", 0, testkit.Values(slow + fast)[slow:slow+fast/2]...)
		h.WaitCommitted("t", 0, slow+fast/2)
		h.Send("t", 0, testkit.Values(slow + fast)[slow+fast/2:]...)
		h.WaitCommitted("t", 0, slow+fast)
		if w := l.workers(slow+fast/2, slow+fast); w != 0 {
			t.Fatalf("%d of %d fast calls after the workers' fast chunk ran on a worker, want 0", w, fast/2)
		}
	})
}

// A chunk whose first call took long has the workers join as soon as that
// call returned, not only when a call blocks: by the time the first of
// 1 ms calls returned, workers calls run at once.
func TestPoolWorkersJoinAfterTheFirstSlowCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 4, 40
		var started atomic.Int32
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
				started.Add(1)
				time.Sleep(time.Millisecond)
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		time.Sleep(1500 * time.Microsecond)
		synctest.Wait()
		if got := started.Load(); got != 1+workers {
			t.Fatalf("%d calls started 1.5 ms into 1 ms calls, want %d (the first, then %d at once)", got, 1+workers, workers)
		}
		h.WaitCommitted("t", 0, n)
	})
}

// Values stay in input order when a chunk moves from the pool's
// goroutine to the workers part-way (fast values, then slow ones of
// uneven lengths), and when the next chunk comes back.
func TestPoolKeepsOrderAcrossTheHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 120
		var mu sync.Mutex
		var got []int64
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.Pool(in, 8, func(_ context.Context, r sluice.Record) (int64, error) {
				if r.Offset >= 10 && r.Offset < 60 {
					time.Sleep(time.Duration(60-r.Offset) * 100 * time.Microsecond)
				}
				return r.Offset, nil
			})
			return stages.Each(out, func(_ context.Context, o int64) error {
				mu.Lock()
				got = append(got, o)
				mu.Unlock()
				return nil
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n/2)...)
		h.Send("t", 0, testkit.Values(n)[n/2:]...)
		h.WaitCommitted("t", 0, n)
		mu.Lock()
		defer mu.Unlock()
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("value %d emitted at position %d (%v), want input order", o, i, got)
			}
		}
		if len(got) != n {
			t.Fatalf("%d values emitted, want %d", len(got), n)
		}
	})
}

// A value failing on the pool's goroutine stops Run at its offset, the
// values before it committed, without calling fn for the rest of a
// backlog of slow values; an invalid one is dead-lettered and the flow
// goes on.
func TestPoolFailureOnThePoolsGoroutine(t *testing.T) {
	t.Run("permanent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int64
			h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (int64, error) {
					calls.Add(1)
					if r.Offset == 7 {
						return 0, sluice.Permanent(errors.New("boom"))
					}
					if r.Offset > 7 {
						time.Sleep(time.Second)
					}
					return r.Offset, nil
				}))
			})
			h.Assign("t", 0)
			h.Send("t", 0, testkit.Values(200)...)
			err := h.Wait()
			var se *sluice.StageError
			if !errors.As(err, &se) || se.Offset != 7 {
				t.Fatalf("Run returned %v, want a StageError at offset 7", err)
			}
			if c := h.Committed("t", 0); c != 7 {
				t.Fatalf("committed %d, want 7", c)
			}
			if c := calls.Load(); c > 8+4 {
				t.Fatalf("fn was called %d times, want at most the failing value and one per worker past it", c)
			}
		})
	})
	t.Run("invalid", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var dead []int64
			h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (int64, error) {
					if r.Offset == 7 {
						return 0, sluice.Invalid(errors.New("bad"))
					}
					return r.Offset, nil
				}))
			}, pipeline.WithDeadLetter(func(_ context.Context, d sluice.DeadLetter) error {
				mu.Lock()
				defer mu.Unlock()
				dead = append(dead, d.Record.Offset)
				return nil
			}))
			h.Assign("t", 0)
			h.Send("t", 0, testkit.Values(100)...)
			h.WaitCommitted("t", 0, 100)
			mu.Lock()
			defer mu.Unlock()
			if len(dead) != 1 || dead[0] != 7 {
				t.Fatalf("dead letters at offsets %v, want [7]", dead)
			}
		})
	})
}

// While a call blocks on the goroutine that took the pool's input, and
// another goroutine has taken the input over, the blocked call counts as
// one of the pool's workers: the chunks after it get workers-1 calls at
// once until it returns.
func TestPoolReliefKeepsTheWorkersLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 2, 20
		var running, peak atomic.Int32
		blocked, release := make(chan struct{}), make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(ctx context.Context, r sluice.Record) (int64, error) {
				if r.Offset < n {
					return r.Offset, nil
				}
				cur := running.Add(1)
				for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
				}
				if r.Offset == n {
					close(blocked)
				}
				<-release
				running.Add(-1)
				return r.Offset, nil
			}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(n)...)
		h.WaitCommitted("t", 0, n)
		h.Send("t", 0, testkit.Values(n + 1)[n:]...) // blocks on the pool's goroutine
		<-blocked
		time.Sleep(3 * time.Millisecond) // the relief takes the input over
		h.Send("t", 0, testkit.Values(n + 10)[n+1:]...)
		time.Sleep(3 * time.Millisecond)
		synctest.Wait()
		if got := running.Load(); got != workers {
			t.Errorf("%d calls running with every call blocked, want %d", got, workers)
		}
		close(release)
		h.WaitCommitted("t", 0, n+10)
		if got := peak.Load(); got != workers {
			t.Fatalf("at most %d calls ran at once, want %d", got, workers)
		}
	})
}
