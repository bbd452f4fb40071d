package stages_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// The tests of this file attack the calls an unkeyed Pool makes on its
// own goroutine (pool_inline.go): the hand-over to the workers and the
// emitter, the hedge, and the ends of a run while a call is on the
// stage's goroutine.

// A call blocked on the pool's goroutine does not hold back the commit
// of the values of its chunk whose calls returned before it: with the
// workers, the emitter emits a chunk's finished prefix at once, so the
// commit follows the values that finished (the Pool doc: "the commit
// follows the finished prefix"). The first chunk is fast (its calls run
// on the pool's goroutine), the second blocks at offset 30 after ten
// fast calls.
func TestPoolCommitsTheValuesBeforeACallBlockedOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n, stuck = 4, 20, int64(30)
		release := make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, workers, func(ctx context.Context, r sluice.Record) (int64, error) {
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
		h.Send("t", 0, testkit.Values(n)...)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		got := h.Committed("t", 0)
		close(release)
		h.WaitCommitted("t", 0, 2*n)
		stopClean(t, h)
		if got != stuck {
			t.Fatalf("committed %d while offset %d blocks for 10ms, want %d (offsets %d to %d returned)", got, stuck, stuck, n, stuck-1)
		}
	})
}

// A call on the pool's goroutine that ignores its context is abandoned by
// a revoke or a shutdown past the drain timeout: Run returns a
// *StageError wrapping ErrAbandoned that names the stage and the record
// still running, and the partition is committed up to it (every value
// before it returned nil), as Each does
// (TestEachAbandonedCallCommitsTheValuesBeforeIt).
func TestPoolAbandonedCallOnItsGoroutineCommitsTheValuesBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(h *testkit.Harness) error
	}{
		{"revoke", func(h *testkit.Harness) error { _ = h.Fake().Revoke("t", 0); return h.Wait() }},
		{"shutdown", func(h *testkit.Harness) error { return h.Stop() }},
		{"loss", func(h *testkit.Harness) error { _ = h.Fake().Lose("t", 0); return h.Wait() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				stuck := int64(n + 10)
				release := make(chan struct{})
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (int64, error) {
						if r.Offset == stuck {
							<-release // ignores its context
						}
						return r.Offset, nil
					}, stages.Name("score")))
				}, pipeline.WithDrainTimeout(4*time.Second))
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(n)...)
				h.WaitCommitted("t", 0, n) // the first chunk: the calls are fast
				h.Send("t", 0, testkit.Values(n)...)
				time.Sleep(10 * time.Millisecond) // n to stuck-1 returned, stuck blocked, the rest done by workers
				synctest.Wait()
				err := tc.end(h)
				var se *sluice.StageError
				if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) {
					t.Errorf("Run returned %v, want a *StageError wrapping ErrAbandoned", err)
				} else {
					if se.Stage != "score" {
						t.Errorf("the abandoned function's error names stage %q, want %q", se.Stage, "score")
					}
					if se.Offset != stuck {
						t.Errorf("the abandoned function's error names offset %d, want %d (the record still running; every record before it returned nil)", se.Offset, stuck)
					}
				}
				if got := h.Committed("t", 0); got != stuck {
					t.Errorf("committed %d, want %d (every record before the abandoned one returned nil)", got, stuck)
				}
				close(release)
			})
		})
	}
}

// In a share group, a shutdown accepts every record whose call returned
// and releases the rest (docs/share.md, "Clean shutdown"): a Pool whose
// call on its own goroutine ignores its context leaves unacknowledged
// only the records from that one on (see
// TestEachShareShutdownAcceptsTheValuesBeforeAnAbandonedCall).
func TestPoolShareShutdownAcceptsTheValuesBeforeACallBlockedOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const batch = 32
		stuck := int64(batch + 20)
		release := make(chan struct{})
		d := sourcetest.NewFakeShareDriver()
		d.CreateTopic(t, "t", 1)
		produce := func(n int) {
			recs := make([]sluice.Record, n)
			for i := range recs {
				recs[i].Value = []byte("v")
			}
			d.Produce(t, "t", recs...)
		}
		r := testkit.Start(t, d.NewShareSource(t, "g", "t"), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (int64, error) {
				if r.Offset == stuck {
					<-release // ignores its context
				}
				return r.Offset, nil
			}, stages.Name("score")))
		}, pipeline.WithDrainTimeout(4*time.Second))
		produce(batch)
		synctest.Wait()
		if got := d.Unacknowledged(t, "g", "t")[0]; got != 0 {
			t.Fatalf("%d records of the first batch unacknowledged, want 0", got)
		}
		produce(batch)
		time.Sleep(10 * time.Millisecond) // 32 to 51 returned, 52 blocked, 53 to 63 done by workers
		synctest.Wait()
		if err := r.Stop(t); !errors.Is(err, sluice.ErrAbandoned) {
			t.Errorf("Run returned %v, want an error wrapping ErrAbandoned", err)
		}
		if got, want := d.Unacknowledged(t, "g", "t")[0], 2*batch-stuck; got != want {
			t.Errorf("%d records left unacknowledged (released), want %d (from the abandoned %d on: every record before it returned nil and must be accepted)", got, want, stuck)
		}
		close(release)
	})
}

// Transient errors retried on the pool's goroutine: each value is called
// once per attempt (never by two goroutines), and every value commits in
// order once its retry succeeded; the retries' backoff lets the workers
// join.
func TestPoolRetriesOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 60
		var mu sync.Mutex
		calls := map[int64]int{}
		var got []int64
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.Pool(in, 3, func(_ context.Context, r sluice.Record) (int64, error) {
				mu.Lock()
				calls[r.Offset]++
				k := calls[r.Offset]
				mu.Unlock()
				if r.Offset%7 == 3 && k == 1 {
					return 0, errors.New("try again")
				}
				return r.Offset, nil
			}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: 3 * time.Millisecond, Max: 3 * time.Millisecond}))
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
		stopClean(t, h)
		mu.Lock()
		defer mu.Unlock()
		for o := int64(0); o < n; o++ {
			want := 1
			if o%7 == 3 {
				want = 2
			}
			if calls[o] != want {
				t.Errorf("offset %d called %d times, want %d", o, calls[o], want)
			}
		}
		if !slices.Equal(got, seq(n)) {
			t.Errorf("emitted %v, want 0 to %d in order", got, n-1)
		}
	})
}

// seq returns 0 to n-1.
func seq(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i)
	}
	return s
}

// Invalid values on the pool's goroutine, then slow calls after them in
// the same chunk and the next: each invalid value is dead-lettered once,
// the others emitted once in order, and everything commits.
func TestPoolInvalidThenSlowCallsOnItsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 90
		var mu sync.Mutex
		var dead, got []int64
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stages.Pool(in, 3, func(_ context.Context, r sluice.Record) (int64, error) {
				if r.Offset%10 == 2 {
					return 0, sluice.Invalid(errors.New("bad"))
				}
				if r.Offset%30 >= 5 && r.Offset%30 < 12 {
					time.Sleep(time.Duration(r.Offset%4+1) * 700 * time.Microsecond)
				}
				return r.Offset, nil
			})
			return stages.Each(out, func(_ context.Context, o int64) error {
				mu.Lock()
				got = append(got, o)
				mu.Unlock()
				return nil
			})
		}, pipeline.WithDeadLetter(func(_ context.Context, d sluice.DeadLetter) error {
			mu.Lock()
			defer mu.Unlock()
			dead = append(dead, d.Record.Offset)
			return nil
		}))
		h.Assign("t", 0)
		for i := 0; i < n; i += 30 {
			h.Send("t", 0, testkit.Values(i + 30)[i:]...)
		}
		h.WaitCommitted("t", 0, n)
		stopClean(t, h)
		mu.Lock()
		defer mu.Unlock()
		var wantDead, wantGot []int64
		for o := int64(0); o < n; o++ {
			if o%10 == 2 {
				wantDead = append(wantDead, o)
			} else {
				wantGot = append(wantGot, o)
			}
		}
		if !slices.Equal(dead, wantDead) {
			t.Errorf("dead letters %v, want %v", dead, wantDead)
		}
		if !slices.Equal(got, wantGot) {
			t.Errorf("emitted %v, want %v", got, wantGot)
		}
	})
}

// A panic of fn on the pool's goroutine stops Run with a PanicError at
// its offset, the values before it committed: in a fast chunk (the
// panic hands the chunk to the emitter) and after the chunk was handed
// over for slow calls.
func TestPoolPanicOnItsGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slowFrom  int64
		panicking int64
	}{{"fast", 1000, 25}, {"after slow calls", 20, 25}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, 3, func(_ context.Context, r sluice.Record) (int64, error) {
						if r.Offset == tc.panicking {
							panic("boom")
						}
						if r.Offset >= tc.slowFrom {
							time.Sleep(100 * time.Microsecond)
						}
						return r.Offset, nil
					}))
				})
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(10)...)
				h.WaitCommitted("t", 0, 10)
				failsAt(t, h, 40, tc.panicking, true)
				checkCommitted(t, h, tc.panicking, "every value before the panic returned")
			})
		})
	}
}

// The stuck detector reports a call blocked on the pool's goroutine once,
// with its offset, and no other (the values after it are done by the
// workers the hedge posted).
func TestPoolStuckCallOnItsGoroutineIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold = time.Second
		stuck := &stuckOffsets{}
		release := make(chan struct{})
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 3, func(ctx context.Context, r sluice.Record) (int64, error) {
				if r.Offset == 25 {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return r.Offset, nil
			}))
		}, pipeline.WithStuckThreshold(threshold), pipeline.WithHooks(stuck))
		h.Assign("t", 0)
		h.Send("t", 0, testkit.Values(20)...)
		h.WaitCommitted("t", 0, 20)
		h.Send("t", 0, testkit.Values(20)...)
		time.Sleep(3 * threshold)
		synctest.Wait()
		if got := stuck.take(); !slices.Equal(got, []int64{25}) {
			t.Errorf("stuck reports for offsets %v, want [25]", got)
		}
		close(release)
		h.WaitCommitted("t", 0, 40)
		stopClean(t, h)
	})
}

// A revoke while a call on the pool's goroutine runs long (within the
// drain timeout) drains the chunk: every value is committed, including
// those the workers the hedge posted did meanwhile; a loss ends the call
// through its context and Run returns with nothing left running.
func TestPoolRevokeAndLossDuringACallOnItsGoroutine(t *testing.T) {
	for _, lose := range []bool{false, true} {
		t.Run(map[bool]string{false: "revoke", true: "loss"}[lose], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, 3, func(ctx context.Context, r sluice.Record) (int64, error) {
						calls.Add(1)
						if r.Offset == 25 {
							select {
							case <-time.After(time.Second):
							case <-ctx.Done():
								return 0, ctx.Err()
							}
						}
						return r.Offset, nil
					}))
				})
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(20)...)
				h.WaitCommitted("t", 0, 20)
				h.Send("t", 0, testkit.Values(20)...)
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				if lose {
					h.Lose("t", 0)
					if got := h.Committed("t", 0); got > 25 {
						t.Errorf("committed %d after the loss, want at most 25", got)
					}
				} else {
					h.Revoke("t", 0)
					checkCommitted(t, h, 40, "the revoke drains every value")
				}
				stopClean(t, h)
				if got := calls.Load(); got != 40 {
					t.Errorf("%d calls, want 40 (each value once)", got)
				}
			})
		})
	}
}
