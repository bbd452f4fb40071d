package stages_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// poolCalls watches the calls of a pool's fn across partitions: at most
// workers at once per partition, never two of one key at once, each key's
// calls in offset order, each value called once; and the values reaching
// the End, which must come in offset order per partition.
type poolCalls struct {
	t       testing.TB
	workers int
	mu      sync.Mutex
	running map[int32]int            // calls running per partition
	busy    map[string]bool          // partition/key being called
	lastKey map[string]int64         // last offset called per partition/key
	called  map[int32]map[int64]bool // values called per partition
	emitted map[int32][]int64        // values emitted per partition, in order
}

func newPoolCalls(t testing.TB, workers int) *poolCalls {
	return &poolCalls{t: t, workers: workers, running: map[int32]int{}, busy: map[string]bool{},
		lastKey: map[string]int64{}, called: map[int32]map[int64]bool{}, emitted: map[int32][]int64{}}
}

func keyOf(r sluice.Record) string { return strconv.FormatInt(r.Offset%5, 10) }

// call is the pool's fn: it checks the limits, runs work, and returns the
// record.
func (c *poolCalls) call(keyed bool, work func(sluice.Record)) func(context.Context, sluice.Record) (sluice.Record, error) {
	return func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		pk := fmt.Sprintf("%d/%s", r.Partition, keyOf(r))
		c.mu.Lock()
		if c.running[r.Partition]++; c.running[r.Partition] > c.workers {
			c.t.Errorf("partition %d: %d calls at once, want at most %d", r.Partition, c.running[r.Partition], c.workers)
		}
		if keyed {
			if c.busy[pk] {
				c.t.Errorf("key %s: two calls at once (offset %d)", pk, r.Offset)
			}
			if last, ok := c.lastKey[pk]; ok && last >= r.Offset {
				c.t.Errorf("key %s: offset %d called after %d", pk, r.Offset, last)
			}
			c.busy[pk], c.lastKey[pk] = true, r.Offset
		}
		if c.called[r.Partition] == nil {
			c.called[r.Partition] = map[int64]bool{}
		}
		if c.called[r.Partition][r.Offset] {
			c.t.Errorf("partition %d: offset %d called twice", r.Partition, r.Offset)
		}
		c.called[r.Partition][r.Offset] = true
		c.mu.Unlock()
		work(r)
		c.mu.Lock()
		c.running[r.Partition]--
		c.busy[pk] = false
		c.mu.Unlock()
		return r, nil
	}
}

// end is the graph's End: it records the emitted order.
func (c *poolCalls) end(_ context.Context, r sluice.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.emitted[r.Partition] = append(c.emitted[r.Partition], r.Offset)
	return nil
}

// checkEmitted checks that partition p emitted exactly offsets 0 to n-1,
// in order.
func (c *poolCalls) checkEmitted(p int32, n int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.emitted[p]
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(got, want) {
		c.t.Errorf("partition %d emitted %d values %v..., want 0 to %d in order", p, len(got), got[:min(len(got), 20)], n-1)
	}
}

// poolOf builds a Pool or a PoolByKey of workers calling fn.
func poolOf(keyed bool, in pipeline.Stream[sluice.Record], workers int, fn func(context.Context, sluice.Record) (sluice.Record, error)) pipeline.Stream[sluice.Record] {
	if keyed {
		return stages.PoolByKey(in, workers, keyOf, fn)
	}
	return stages.Pool(in, workers, fn)
}

// Bursts separated by idle time, on several partitions: the workers leave
// between bursts and start again, and still every value is called once,
// within the limits, and emitted in order; nothing is left queued without
// a worker (every partition commits every burst).
func TestPoolAttackIdleBurstsKeepTheContract(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers, parts, bursts, per = 4, 3, 6, 37
				c := newPoolCalls(t, workers)
				work := func(r sluice.Record) {
					switch r.Offset % 7 {
					case 0:
						time.Sleep(time.Millisecond) // holds a worker while others run
					case 3:
						runtime.Gosched()
					}
				}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(poolOf(keyed, in, workers, c.call(keyed, work)), c.end)
				})
				h.Assign("t", 0, 1, 2)
				for b := range bursts {
					for p := range int32(parts) {
						// A burst of several deliveries: several chunks.
						vals := testkit.Values(per)
						h.Send("t", p, vals[:per/3]...)
						h.Send("t", p, vals[per/3:]...)
					}
					for p := range int32(parts) {
						h.WaitCommitted("t", p, int64((b+1)*per))
					}
					synctest.Wait()
					if got := workersRunning(); got != 0 {
						t.Fatalf("burst %d: %d workers running with nothing queued, want 0", b, got)
					}
				}
				for p := range int32(parts) {
					c.checkEmitted(p, bursts*per)
				}
				stopClean(t, h)
			})
		})
	}
}

// stuckOffsets is a HookStuck recording the offsets reported stuck.
type stuckOffsets struct {
	mu      sync.Mutex
	offsets []int64
}

func (s *stuckOffsets) OnStuck(_ string, _ sluice.TopicPartition, offset int64, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offsets = append(s.offsets, offset)
}

// take returns the offsets reported since the last take, sorted.
func (s *stuckOffsets) take() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := slices.Sorted(slices.Values(s.offsets))
	s.offsets = nil
	return got
}

// The stuck detector watches the calls of workers that started again
// after the pool's workers left (their probes are reused): every value
// blocked in fn is reported once, with its offset, burst after burst.
func TestPoolAttackStuckAfterWorkersRestart(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers, threshold = 3, time.Second
				stuck := &stuckOffsets{}
				var mu sync.Mutex
				blocked := map[int64]chan struct{}{}
				hold := func(off int64) chan struct{} {
					mu.Lock()
					defer mu.Unlock()
					return blocked[off]
				}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(poolOf(keyed, in, workers, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
						if ch := hold(r.Offset); ch != nil {
							select {
							case <-ch:
							case <-ctx.Done():
							}
						}
						return r, nil
					}))
				}, pipeline.WithStuckThreshold(threshold), pipeline.WithHooks(stuck))
				h.Assign("t", 0)
				next := int64(0)
				for round := range 4 {
					// Fast values first: the workers run, then leave.
					h.Send("t", 0, testkit.Values(20)...)
					next += 20
					h.WaitCommitted("t", 0, next)
					synctest.Wait()
					// Then values that block: keyed, offsets of different
					// keys may share a worker, so one blocks; unkeyed,
					// every worker blocks on one.
					nblock := int64(workers)
					if keyed {
						nblock = 1
					}
					release := make(chan struct{})
					var want []int64
					mu.Lock()
					for i := range nblock {
						blocked[next+i] = release
						want = append(want, next+i)
					}
					mu.Unlock()
					h.Send("t", 0, testkit.Values(int(nblock))...)
					time.Sleep(3 * threshold)
					synctest.Wait()
					if got := stuck.take(); !slices.Equal(got, want) {
						t.Fatalf("round %d: stuck reports for offsets %v, want %v", round, got, want)
					}
					close(release)
					next += nblock
					h.WaitCommitted("t", 0, next)
				}
				stopClean(t, h)
			})
		})
	}
}

// Without synctest, so the scheduler picks real interleavings of workers
// leaving and values arriving: many partitions get bursts, then are
// revoked mid-burst. The revoke drains every value delivered (each called once,
// within the limits, emitted in order) and commits all of them; goleak
// (TestMain) checks that no worker outlives its partition.
func TestPoolAttackRevokeDuringBursts(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			const workers, parts, chunks, per = 3, 8, 12, 17
			c := newPoolCalls(t, workers)
			entered := &counts{n: map[int32]int{}}
			work := func(r sluice.Record) {
				if r.Offset%3 == 0 {
					runtime.Gosched()
				}
			}
			h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				in = stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
					entered.add(r.Partition)
					return r, nil
				})
				return stages.Each(poolOf(keyed, in, workers, c.call(keyed, work)), c.end)
			})
			ps := make([]int32, parts)
			for i := range ps {
				ps[i] = int32(i)
			}
			h.Assign("t", ps...)
			var wg sync.WaitGroup
			for _, p := range ps {
				wg.Go(func() {
					for range chunks {
						h.Send("t", p, testkit.Values(per)...)
						runtime.Gosched()
					}
				})
			}
			wg.Wait()
			h.Revoke("t", ps...)
			for _, p := range ps {
				// Records not fed to the graph when the revoke came
				// (waiting for the budget, or queued for the feeder)
				// are dropped for the next owner; every one that entered
				// the graph is drained.
				n := entered.of(p)
				want := int64(n)
				if n == 0 {
					want = -1 // revoked before anything was fed
				}
				if got := h.Committed("t", p); got != want {
					t.Errorf("partition %d committed %d after the revoke, want %d (every record that entered the graph)", p, got, want)
				}
				c.checkEmitted(p, n)
			}
			stopClean(t, h)
		})
	}
}

// A Pool fed by Batch and Unbatch (values of one record arrive in
// several chunks, tickets split) and followed by a Tee commits every
// record once all its values were called, across idle gaps.
func TestPoolAttackBetweenBatchUnbatchAndTee(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers, rounds, per = 3, 3, 40
				var mu sync.Mutex
				calls := 0
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					fn := func(_ context.Context, r sluice.Record) (sluice.Record, error) {
						mu.Lock()
						calls++
						mu.Unlock()
						if r.Offset%4 == 0 {
							time.Sleep(time.Millisecond)
						}
						return r, nil
					}
					s := stages.Unbatch(stages.Batch(in, 7, time.Millisecond))
					s = poolOf(keyed, s, workers, fn)
					tee := stages.Tee(s, 2)
					stages.Discard(tee[1])
					return stages.Discard(tee[0])
				})
				h.Assign("t", 0)
				for r := range rounds {
					h.Send("t", 0, testkit.Values(per)...)
					h.WaitCommitted("t", 0, int64((r+1)*per))
					time.Sleep(time.Second) // idle: the workers leave
					synctest.Wait()
				}
				stopClean(t, h)
				if calls != rounds*per {
					t.Fatalf("%d calls, want %d", calls, rounds*per)
				}
			})
		})
	}
}

// counts counts values per partition.
type counts struct {
	mu sync.Mutex
	n  map[int32]int
}

func (c *counts) add(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[p]++
}

func (c *counts) of(p int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[p]
}

// Without synctest: values arrive one or two at a time, each just as the
// workers that processed the previous ones are about to leave, so posting
// races with leaving on real schedules. A piece left queued with no
// worker would stop the commit (WaitCommitted fails).
func TestPoolAttackTrickleAgainstLeavingWorkers(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pool", true: "PoolByKey"}[keyed], func(t *testing.T) {
			const workers, rounds = 2, 300
			c := newPoolCalls(t, workers)
			h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(poolOf(keyed, in, workers, c.call(keyed, func(sluice.Record) {})), c.end)
			})
			h.Assign("t", 0)
			next := int64(0)
			for i := range rounds {
				n := 1 + i%2
				h.Send("t", 0, testkit.Values(n)...)
				next += int64(n)
				h.WaitCommitted("t", 0, next)
			}
			c.checkEmitted(0, int(next))
			stopClean(t, h)
		})
	}
}
