package stages_test

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The tests of this file attack how an unkeyed Pool's dispatcher leaves a
// chunk whose calls turned slow, or whose call blocked, to a worker (it
// posts the chunk and goes back to the input) and the accounting of the
// crew around it.

// pace is what a value's call does, chosen from a seed and its offset.
type pace int

const (
	paceFast    pace = iota
	paceSlow         // 20 µs: a group of calls is slow
	paceSlower       // 300 µs
	paceHedged       // 1.5 ms: one or two checks of the hedge
	paceBlocked      // 4 ms: the hedge relieves the dispatcher
	paceRetried      // fails its first attempt (the retry waits 2 ms)
	paceInvalid      // dead-lettered
)

// call is a call of pace p, attempt k (from 1): it takes the pace's
// time, or fails as the pace says.
func (p pace) call(k int) error {
	switch p {
	case paceSlow:
		time.Sleep(20 * time.Microsecond)
	case paceSlower:
		time.Sleep(300 * time.Microsecond)
	case paceHedged:
		time.Sleep(1500 * time.Microsecond)
	case paceBlocked:
		time.Sleep(4 * time.Millisecond)
	case paceRetried:
		if k == 1 {
			return errors.New("try again")
		}
	case paceInvalid:
		return sluice.Invalid(errors.New("bad"))
	}
	return nil
}

func paceOf(seed maphash.Seed, o int64) pace {
	v := maphash.Comparable(seed, o) % 100
	switch {
	case v < 68:
		return paceFast
	case v < 80:
		return paceSlow
	case v < 87:
		return paceSlower
	case v < 92:
		return paceHedged
	case v < 95:
		return paceBlocked
	case v < 98:
		return paceRetried
	default:
		return paceInvalid
	}
}

// Mixed paces in fake time, from a set of seeds: chunks of 1 to 40
// records arrive with gaps of 0 to 3 ms while calls are fast, slow (the
// dispatcher leaves its chunk to a worker), block past the hedge (a relief
// takes the input), retry after a backoff, or fail as invalid. Every value
// is called once (a retried one twice), at most workers at once, the valid
// ones are emitted once and in order, the invalid ones dead-lettered once,
// everything commits, no worker is left running, and Run stops clean.
func TestPoolLeavesUnderMixedPacesKeepTheContract(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		for seedNo := range 12 {
			t.Run(fmt.Sprintf("%d/%d", workers, seedNo), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					seed := maphash.MakeSeed()
					c := newReliefCalls(t, workers)
					work := func(_ context.Context, r sluice.Record, k int) error {
						return paceOf(seed, r.Offset).call(k)
					}
					var mu sync.Mutex
					var dead []int64
					h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
						return stages.Each(stages.Pool(in, workers, c.call(work),
							stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: 2 * time.Millisecond, Max: 2 * time.Millisecond})), c.end)
					}, pipeline.WithDeadLetter(func(_ context.Context, d sluice.DeadLetter) error {
						mu.Lock()
						defer mu.Unlock()
						dead = append(dead, d.Record.Offset)
						return nil
					}))
					h.Assign("t", 0)
					total := 0
					for r := range 150 {
						v := maphash.Comparable(seed, -int64(r)-1)
						s := 1 + int(v%40)
						if v%3 == 0 {
							s = 1
						}
						h.Send("t", 0, testkit.Values(s)...)
						total += s
						if g := time.Duration(v>>8%4) * time.Millisecond; g > 0 && v%2 == 0 {
							time.Sleep(g)
						}
					}
					h.WaitCommitted("t", 0, int64(total))
					synctest.Wait()
					if got := workersRunning(); got != 0 {
						t.Errorf("%d workers running with nothing to do", got)
					}
					stopClean(t, h)
					var wantEmitted, wantDead []int64
					for o := range int64(total) {
						if paceOf(seed, o) == paceInvalid {
							wantDead = append(wantDead, o)
						} else {
							wantEmitted = append(wantEmitted, o)
						}
					}
					c.checkEmitted(0, wantEmitted)
					mu.Lock()
					if !slices.Equal(dead, wantDead) {
						t.Errorf("dead-lettered %v, want %v", dead, wantDead)
					}
					mu.Unlock()
					c.checkAttempts(0, total, func(o int64) int {
						if paceOf(seed, o) == paceRetried {
							return 2
						}
						return 1
					})
				})
			})
		}
	}
}

// The Pool doc's contract (docs/performance.md): "a blocked call holds
// the values after it for 2 ms at most (with more than one worker)". With
// 2 workers, a chunk of 10 values turns slow at its first call on the
// goroutine taking the input, which hands the chunk to a worker and goes
// back to the input, where 4 chunks of one record wait: they fill the
// workers' queue. The worker taking the chunk calls its second value,
// which blocks for 50 ms; the other worker calls the 4 records and is
// then idle. The 8 values after the blocked one are to be called within 2
// ms, as they were when the goroutine taking the input went on with the
// chunk itself (and the hedge relieved it once it blocked).
func TestPoolLeftChunkKeepsItsValuesMovingWhileAWorkerBlocks(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtimeGOMAXPROCS(procs)()
			synctest.Test(t, func(t *testing.T) {
				const workers, warm, n, extra = 2, 20, 10, 4
				slow, blocked := int64(warm), int64(warm+1)
				gate := make(chan struct{})
				var mu sync.Mutex
				began := map[int64]time.Time{}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
						mu.Lock()
						began[r.Offset] = time.Now()
						mu.Unlock()
						switch r.Offset {
						case slow:
							<-gate
							time.Sleep(20 * time.Microsecond)
						case blocked:
							time.Sleep(50 * time.Millisecond)
						}
						return r.Offset, nil
					}))
				})
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(warm)...)
				h.WaitCommitted("t", 0, warm) // fast: on the pool's goroutine
				h.Send("t", 0, testkit.Values(warm + n)[warm:]...)
				synctest.Wait() // the first call of the chunk waits for the gate
				for o := warm + n; o < warm+n+extra; o++ {
					h.Send("t", 0, testkit.Values(o + 1)[o:]...)
					synctest.Wait()
				}
				start := time.Now()
				close(gate)
				time.Sleep(5 * time.Millisecond)
				synctest.Wait()
				mu.Lock()
				var late []int64
				for o := blocked + 1; o < warm+n; o++ {
					if b, ok := began[o]; !ok || b.Sub(start) > 2*time.Millisecond {
						late = append(late, o)
					}
				}
				_, extraCalled := began[warm+n+extra-1]
				mu.Unlock()
				if !extraCalled {
					t.Errorf("offset %d not called 5 ms in: the test does not exercise a worker left idle", warm+n+extra-1)
				}
				if len(late) > 0 {
					t.Errorf("offsets %v not called 5 ms after offset %d began to block (a worker was idle), want each within 2 ms", late, blocked)
				}
				h.WaitCommitted("t", 0, warm+n+extra)
				stopClean(t, h)
			})
		})
	}
}

// runtimeGOMAXPROCS sets GOMAXPROCS to n and returns what restores it.
func runtimeGOMAXPROCS(n int) func() {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
