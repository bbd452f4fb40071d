package stages_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The tests of this file attack the relief dispatchers of an unkeyed Pool
// (pool_intake.go): while a call blocks on the goroutine taking the
// pool's input, another goroutine takes the input over.

// onRelief reports whether the calling goroutine is a relief dispatcher
// (not the stage's own goroutine, not a worker).
func onRelief() bool {
	buf := make([]byte, 64<<10)
	s := string(buf[:runtime.Stack(buf, false)])
	return strings.Contains(s, "relievedRun") && !strings.Contains(s, "stages.(*workerPool[...]).work(")
}

// reliefCalls watches the calls of the pools of up to 8 partitions: at
// most workers at once per partition, each value's attempts, how many slow
// calls ran on a relief dispatcher, and the values reaching the End in
// order. Each partition has a lock of its own, so that the calls of one
// do not slow down those of another.
type reliefCalls struct {
	t       testing.TB
	workers int
	slow    func(o int64) bool // calls worth a look at their stack
	parts   [8]reliefPart
}

type reliefPart struct {
	mu       sync.Mutex
	running  int
	peak     int
	attempts map[int64]int
	onRelief int // slow calls made on a relief dispatcher
	emitted  []int64
}

func newReliefCalls(t testing.TB, workers int) *reliefCalls {
	c := &reliefCalls{t: t, workers: workers}
	for i := range c.parts {
		c.parts[i].attempts = map[int64]int{}
	}
	return c
}

// call runs work for r (which may fail the attempt), within the limit.
func (c *reliefCalls) call(work func(ctx context.Context, r sluice.Record, attempt int) error) func(context.Context, sluice.Record) (sluice.Record, error) {
	return func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
		rel := c.slow != nil && c.slow(r.Offset) && onRelief() // a stack costs more than a fast call
		p := &c.parts[r.Partition]
		p.mu.Lock()
		p.running++
		p.peak = max(p.peak, p.running)
		if p.running > c.workers {
			c.t.Errorf("partition %d: %d calls at once (offset %d), want at most %d", r.Partition, p.running, r.Offset, c.workers)
		}
		p.attempts[r.Offset]++
		k := p.attempts[r.Offset]
		if rel {
			p.onRelief++
		}
		p.mu.Unlock()
		err := work(ctx, r, k)
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
		return r, err
	}
}

func (c *reliefCalls) end(_ context.Context, r sluice.Record) error {
	p := &c.parts[r.Partition]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emitted = append(p.emitted, r.Offset)
	return nil
}

// checkEmitted checks that partition p emitted want, in order.
func (c *reliefCalls) checkEmitted(p int32, want []int64) {
	c.t.Helper()
	pp := &c.parts[p]
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if got := pp.emitted; !slices.Equal(got, want) {
		first := 0
		for first < min(len(got), len(want)) && got[first] == want[first] {
			first++
		}
		c.t.Errorf("partition %d emitted %d values, want %d in order (first difference at index %d: got %v, want %v)", p, len(got), len(want), first, got[first:min(len(got), first+10)], want[first:min(len(want), first+10)])
	}
}

// checkAttempts checks that each offset o of partition p below n was
// called attempts(o) times.
func (c *reliefCalls) checkAttempts(p int32, n int, attempts func(o int64) int) {
	c.t.Helper()
	pp := &c.parts[p]
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for o := range int64(n) {
		if got, w := pp.attempts[o], attempts(o); got != w {
			c.t.Errorf("partition %d: offset %d called %d times, want %d", p, o, got, w)
		}
	}
}

// reliefs returns the slow calls made on relief dispatchers, across
// partitions.
func (c *reliefCalls) reliefs() (n int) {
	for i := range c.parts {
		c.parts[i].mu.Lock()
		n += c.parts[i].onRelief
		c.parts[i].mu.Unlock()
	}
	return n
}

// Reliefs in chains, in fake time: chunks of mixed sizes arrive while
// calls of 1.5 to 4 ms block on whichever goroutine takes the input (the
// stage's own, a relief, a relief of a relief), some values retry after a
// 2 ms backoff, and the input keeps coming. Every value is called once
// (twice for a retried one), at most workers calls run at once, the values
// are emitted once and in order, everything commits, and Run stops clean.
func TestPoolReliefChainsKeepOrderLimitAndCommit(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 5} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newReliefCalls(t, workers)
				c.slow = func(int64) bool { return true } // no time passes
				retried := func(o int64) bool { return o%37 == 9 }
				gate := make(chan struct{})
				gatedFrom := int64(1 << 40) // set before the last burst
				var gated sync.Mutex
				work := func(_ context.Context, r sluice.Record, k int) error {
					gated.Lock()
					g := r.Offset >= gatedFrom
					gated.Unlock()
					if g {
						<-gate
						return nil
					}
					switch {
					case r.Offset%23 == 3:
						time.Sleep(4 * time.Millisecond)
					case r.Offset%31 == 5:
						time.Sleep(1500 * time.Microsecond)
					}
					if retried(r.Offset) && k == 1 {
						return errors.New("try again")
					}
					return nil
				}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(stages.Pool(in, workers, c.call(work),
						stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: 2 * time.Millisecond, Max: 2 * time.Millisecond})), c.end)
				})
				h.Assign("t", 0)
				sizes := []int{1, 1, 5, 1, 2, 9, 1, 1, 3, 1, 20, 1, 4}
				gaps := []time.Duration{0, 300 * time.Microsecond, 0, 5 * time.Millisecond, 0, 3 * time.Millisecond, 700 * time.Microsecond}
				total := 0
				for r := range 120 {
					s := sizes[r%len(sizes)]
					h.Send("t", 0, testkit.Values(s)...)
					total += s
					if g := gaps[r%len(gaps)]; g > 0 {
						time.Sleep(g)
					}
				}
				h.WaitCommitted("t", 0, int64(total))
				// The crew's count is back to none running: a burst of
				// calls that all block gets exactly workers of them at once.
				synctest.Wait()
				if got := workersRunning(); got != 0 {
					t.Errorf("%d workers running after the chains, with nothing to do", got)
				}
				gated.Lock()
				gatedFrom = int64(total)
				gated.Unlock()
				h.Send("t", 0, testkit.Values(1)...)
				h.Send("t", 0, testkit.Values(4*workers)...)
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				c.parts[0].mu.Lock()
				running := c.parts[0].running
				c.parts[0].mu.Unlock()
				if running != workers {
					t.Errorf("%d calls running with %d blocked values queued, want %d", running, 4*workers+1, workers)
				}
				close(gate)
				total += 4*workers + 1
				h.WaitCommitted("t", 0, int64(total))
				stopClean(t, h)
				c.checkEmitted(0, seq(total))
				c.checkAttempts(0, total, func(o int64) int {
					if retried(o) && o < gatedFrom {
						return 2
					}
					return 1
				})
				if c.reliefs() == 0 {
					t.Errorf("no call ran on a relief dispatcher: the test does not exercise them")
				}
			})
		})
	}
}

// reliefChain brings a pool of workers to a call of offset stuck blocked
// on a relief dispatcher: a first call (offset n) blocks on the stage's
// own goroutine for 3 ms (a relief takes the input over), the calls turn
// fast again, and offset stuck (n+21) runs on that relief, which the
// hedge relieves in turn. extra records follow it, each in a chunk of its
// own. The pool's fn is to sleep 3 ms at offset n and block at n+21.
func reliefChain(t *testing.T, h *testkit.Harness, n, extra int) {
	t.Helper()
	h.Assign("t", 0)
	h.Send("t", 0, testkit.Values(n)...)
	h.WaitCommitted("t", 0, int64(n)) // fast: on the stage's goroutine
	h.Send("t", 0, testkit.Values(1)...)
	time.Sleep(5 * time.Millisecond) // offset n blocked 3 ms: relieved
	h.WaitCommitted("t", 0, int64(n+1))
	h.Send("t", 0, testkit.Values(10)...) // to the workers (the calls were slow)
	h.WaitCommitted("t", 0, int64(n+11))
	h.Send("t", 0, testkit.Values(10)...) // on the relief: fast again
	h.WaitCommitted("t", 0, int64(n+21))
	h.Send("t", 0, testkit.Values(1)...) // offset n+21 blocks on the relief
	time.Sleep(5 * time.Millisecond)
	for range extra {
		h.Send("t", 0, testkit.Values(1)...)
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(5 * time.Millisecond)
	synctest.Wait()
}

// A call that ignores its context, blocked on a relief dispatcher (the
// relief of the stage's goroutine, itself relieved), with more input
// queued behind it: a revoke, a shutdown or a loss abandons it past the
// exit grace. Run returns a *StageError wrapping ErrAbandoned naming the
// stage and the blocked record, the partition is committed exactly up to
// it, and once the call returns every goroutine of the pool ends.
func TestPoolAbandonedCallOnAReliefCommitsTheValuesBeforeIt(t *testing.T) {
	for _, workers := range []int{1, 3} {
		for _, tc := range []struct {
			name string
			end  func(h *testkit.Harness) error
		}{
			{"revoke", func(h *testkit.Harness) error { _ = h.Fake().Revoke("t", 0); return h.Wait() }},
			{"shutdown", func(h *testkit.Harness) error { return h.Stop() }},
			{"loss", func(h *testkit.Harness) error { _ = h.Fake().Lose("t", 0); return h.Wait() }},
		} {
			t.Run(fmt.Sprintf("%d/%s", workers, tc.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const n, extra = 20, 8
					first, stuck := int64(n), int64(n+21)
					release := make(chan struct{})
					var mu sync.Mutex
					var stuckOnRelief bool
					h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
						return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
							switch r.Offset {
							case first:
								time.Sleep(3 * time.Millisecond)
							case stuck:
								mu.Lock()
								stuckOnRelief = onRelief()
								mu.Unlock()
								<-release // ignores its context
							}
							return r.Offset, nil
						}, stages.Name("score")))
					}, pipeline.WithDrainTimeout(4*time.Second))
					reliefChain(t, h, n, extra)
					mu.Lock()
					if !stuckOnRelief {
						t.Errorf("offset %d was not called on a relief dispatcher", stuck)
					}
					mu.Unlock()
					if got := h.Committed("t", 0); got != stuck {
						t.Errorf("committed %d while offset %d blocks, want %d", got, stuck, stuck)
					}
					err := tc.end(h)
					var se *sluice.StageError
					if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) {
						t.Errorf("Run returned %v, want a *StageError wrapping ErrAbandoned", err)
					} else if se.Stage != "score" || se.Offset != stuck {
						t.Errorf("the abandoned function's error names stage %q offset %d, want %q offset %d", se.Stage, se.Offset, "score", stuck)
					}
					if got := h.Committed("t", 0); got != stuck {
						t.Errorf("committed %d, want %d (every record before the abandoned one returned nil)", got, stuck)
					}
					close(release)
					synctest.Wait()
					if got := workersRunning(); got != 0 {
						t.Errorf("%d workers still running once the abandoned call returned", got)
					}
				})
			})
		}
	}
}

// A call blocked on a relief dispatcher (relieved in turn) is reported
// stuck once, with its offset, by the probe the relief took over from the
// dispatcher before it; once it returns every value commits.
func TestPoolStuckCallOnAReliefIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold = time.Second
		const n, extra = 20, 5
		first, stuck := int64(n), int64(n+21)
		rep := &stuckOffsets{}
		release := make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 2, func(ctx context.Context, r sluice.Record) (int64, error) {
				switch r.Offset {
				case first:
					time.Sleep(3 * time.Millisecond)
				case stuck:
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return r.Offset, nil
			}))
		}, pipeline.WithStuckThreshold(threshold), pipeline.WithHooks(rep))
		reliefChain(t, h, n, extra)
		time.Sleep(3 * threshold)
		synctest.Wait()
		if got := rep.take(); !slices.Equal(got, []int64{stuck}) {
			t.Errorf("stuck reports for offsets %v, want [%d]", got, stuck)
		}
		close(release)
		h.WaitCommitted("t", 0, int64(n+22+extra))
		stopClean(t, h)
	})
}

// A revoke while a call on a relief dispatcher (relieved in turn) runs
// long, within the drain timeout, with records queued behind it: the
// revoke drains them all, each called once, and Run goes on; a loss ends
// the call through its context, commits nothing past it, and Run goes on.
func TestPoolRevokeAndLossDuringACallOnARelief(t *testing.T) {
	for _, lose := range []bool{false, true} {
		t.Run(map[bool]string{false: "revoke", true: "loss"}[lose], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n, extra = 20, 6
				first, stuck := int64(n), int64(n+21)
				c := newReliefCalls(t, 3)
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(stages.Pool(in, 3, c.call(func(ctx context.Context, r sluice.Record, _ int) error {
						switch r.Offset {
						case first:
							time.Sleep(3 * time.Millisecond)
						case stuck:
							select {
							case <-time.After(time.Second):
							case <-ctx.Done():
								return ctx.Err()
							}
						}
						return nil
					})), c.end)
				})
				reliefChain(t, h, n, extra)
				total := n + 22 + extra
				if lose {
					h.Lose("t", 0)
					if got := h.Committed("t", 0); got != stuck {
						t.Errorf("committed %d after the loss, want %d", got, stuck)
					}
				} else {
					h.Revoke("t", 0)
					checkCommitted(t, h, int64(total), "the revoke drains every value")
					c.checkEmitted(0, seq(total))
				}
				stopClean(t, h)
				c.checkAttempts(0, total, func(int64) int { return 1 })
			})
		})
	}
}

// The emitter fails while a relief takes the input: on the pool's
// goroutine a slow first call has a worker join (workers > 1), the next
// value runs 5 ms and fails for good, and the one after it ignores its
// context; the hedge relieves the pool's goroutine within 2 ms, and more
// records arrive, each in a chunk of its own, for the relief to take in.
// At 5 ms the failure reaches the emitter, which stops Run: Run returns the
// failure at its offset with the values before it committed, and once the
// call returns every goroutine of the pool ends (the package's goleak
// check).
func TestPoolFailureWhileAReliefTakesTheInput(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				failing := int64(n + 1)
				release := make(chan struct{})
				defer close(release)
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
						switch r.Offset {
						case n:
							time.Sleep(10 * time.Microsecond)
						case failing:
							time.Sleep(5 * time.Millisecond)
							return 0, sluice.Permanent(errors.New("boom"))
						case failing + 1:
							<-release // ignores its context
						}
						return r.Offset, nil
					}))
				}, pipeline.WithDrainTimeout(4*time.Second))
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(n)...)
				h.WaitCommitted("t", 0, n)
				h.Send("t", 0, testkit.Values(3)...) // n, failing, failing+1
				time.Sleep(3 * time.Millisecond)     // a relief takes the input
				h.Send("t", 0, testkit.Values(1)...)
				for range 4 {
					h.Send("t", 0, testkit.Values(1)...)
				}
				err := h.Wait()
				var se *sluice.StageError
				if !errors.As(err, &se) || se.Offset != failing {
					t.Fatalf("Run returned %v, want a StageError at offset %d", err, failing)
				}
				checkCommitted(t, h, failing, "every value before the failing one returned")
			})
		})
	}
}
