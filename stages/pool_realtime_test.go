package stages_test

import (
	"context"
	"errors"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// realTimeMix is one mix of an unkeyed Pool's paths run in real time, so
// that real schedules interleave the goroutine taking the input (and its
// reliefs), the hedge's timer, the workers and the emitter, on several
// partitions whose pools share their free chunks. time.Sleep in a call
// stands for the call's duration, and between sends for a gap in the
// input; nothing synchronises on it.
type realTimeMix struct {
	workers []int
	parts   int
	chunks  int                                // chunks sent per partition
	size    func(p int32, i int) int           // records in chunk i of partition p
	gap     func(p int32, i int) time.Duration // wait after sending chunk i (0: none)
	// work is the call for the record at offset o, attempt k (from 1):
	// it may sleep, and fails a value that is invalid or retried.
	work    func(o int64, k int) error
	invalid func(o int64) bool // dead-lettered
	retried func(o int64) bool // fails its first attempt, retried after 1 ms
	slow    func(o int64) bool // calls to look for on a relief (logged)
}

// realTimeMixes: the hand-over of a chunk on a failed value and a slow
// group; leaving chunks whose calls turned slow, with reliefs and
// retries; chains of reliefs with gaps in the input; and mixed paces
// without failures.
func realTimeMixes() map[string]realTimeMix {
	seed := maphash.MakeSeed()
	cycle := func(sizes ...int) func(p int32, i int) int {
		return func(p int32, i int) int { return sizes[(i+int(p))%len(sizes)] }
	}
	return map[string]realTimeMix{
		"hand-overs": {
			workers: []int{1, 2, 3}, parts: 6, chunks: 50,
			size: cycle(1, 1, 40, 3, 1, 130, 2, 33, 1, 64),
			work: func(o int64, _ int) error {
				switch {
				case o%37 == 5:
					time.Sleep(1200 * time.Microsecond)
				case o%11 == 3:
					time.Sleep(20 * time.Microsecond)
				case o%3 == 0:
					runtime.Gosched()
				}
				if o%13 == 4 {
					return sluice.Invalid(errors.New("bad"))
				}
				return nil
			},
			invalid: func(o int64) bool { return o%13 == 4 },
		},
		"leaves": {
			workers: []int{1, 2, 4}, parts: 8, chunks: 60,
			size: func(p int32, i int) int {
				v := maphash.Comparable(seed, int64(p)<<32|int64(i))
				if v%3 == 0 {
					return 1
				}
				return 1 + int(v%40)
			},
			gap: func(p int32, i int) time.Duration {
				if i%4 == int(p)%4 {
					return time.Duration(i%3) * 700 * time.Microsecond
				}
				return 0
			},
			work:    func(o int64, k int) error { return paceOf(seed, o).call(k) },
			invalid: func(o int64) bool { return paceOf(seed, o) == paceInvalid },
			retried: func(o int64) bool { return paceOf(seed, o) == paceRetried },
		},
		"reliefs": {
			workers: []int{1, 2, 4}, parts: 6, chunks: 56,
			size: cycle(1, 1, 40, 3, 1, 1, 1, 130, 2, 33, 1, 64, 1, 1),
			gap: func(p int32, i int) time.Duration {
				if i%2 == int(p)%2 {
					return time.Duration(i%5) * 600 * time.Microsecond
				}
				return 0
			},
			work: func(o int64, k int) error {
				switch {
				case o%197 == 5:
					time.Sleep(3 * time.Millisecond)
				case o%173 == 2:
					time.Sleep(1500 * time.Microsecond)
				}
				if o%151 == 11 && k == 1 {
					return errors.New("try again")
				}
				if o%19 == 7 {
					return sluice.Invalid(errors.New("bad"))
				}
				return nil
			},
			invalid: func(o int64) bool { return o%19 == 7 },
			retried: func(o int64) bool { return o%151 == 11 },
			slow:    func(o int64) bool { return o%197 == 5 || o%173 == 2 || o%151 == 11 },
		},
		"mixed paces": {
			workers: []int{1, 2, 3}, parts: 4, chunks: 12,
			size: func(p int32, i int) int {
				sizes := []int{1, 7, 64, 3, 130, 2, 33}
				return sizes[(i/2+int(p)+3*(i%2))%len(sizes)]
			},
			work: func(o int64, _ int) error {
				switch {
				case o%41 == 7:
					time.Sleep(1500 * time.Microsecond) // the hedge posts the rest
				case o%11 == 3:
					time.Sleep(20 * time.Microsecond) // a slow group
				case o%3 == 0:
					runtime.Gosched()
				}
				return nil
			},
		},
	}
}

// Each mix, with each number of workers: every value is called once (a
// retried one twice), at most workers at once per partition (a blocked
// goroutine taking the input counts), every invalid value is
// dead-lettered once, the others are emitted once and in order, and every
// partition commits its end.
func TestPoolInRealTime(t *testing.T) {
	for name, mix := range realTimeMixes() {
		for _, workers := range mix.workers {
			t.Run(name+"/"+strconv.Itoa(workers), func(t *testing.T) { mix.run(t, workers) })
		}
	}
}

func (mix realTimeMix) run(t *testing.T, workers int) {
	is := func(f func(int64) bool, o int64) bool { return f != nil && f(o) }
	c := newReliefCalls(t, workers)
	c.slow = mix.slow
	var opts []stages.CallOption
	if mix.retried != nil {
		opts = append(opts, stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond, Max: time.Millisecond}))
	}
	var dead deadLetterOffsets
	h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(stages.Pool(in, workers, c.call(func(_ context.Context, r sluice.Record, k int) error {
			return mix.work(r.Offset, k)
		}), opts...), c.end)
	}, dead.option())
	ps := assignPartitions(h, mix.parts)
	want := map[int32]int{}
	var wg sync.WaitGroup
	for _, p := range ps {
		for i := range mix.chunks {
			want[p] += mix.size(p, i)
		}
		wg.Go(func() {
			for i := range mix.chunks {
				h.Send("t", p, testkit.Values(mix.size(p, i))...)
				if mix.gap != nil {
					time.Sleep(mix.gap(p, i)) // a gap in the input, not a synchronisation
				}
			}
		})
	}
	wg.Wait()
	for _, p := range ps {
		h.WaitCommitted("t", p, int64(want[p]))
	}
	stopClean(t, h)
	for _, p := range ps {
		var wantEmitted, wantDead []int64
		for o := range int64(want[p]) {
			if is(mix.invalid, o) {
				wantDead = append(wantDead, o)
			} else {
				wantEmitted = append(wantEmitted, o)
			}
		}
		c.checkEmitted(p, wantEmitted)
		if got := dead.of(p); !slices.Equal(got, wantDead) {
			t.Errorf("partition %d dead-lettered %v, want %v", p, got, wantDead)
		}
		c.checkAttempts(p, want[p], func(o int64) int {
			if is(mix.retried, o) {
				return 2
			}
			return 1
		})
	}
	if mix.slow != nil && c.reliefs() == 0 {
		t.Logf("no slow call ran on a relief dispatcher")
	}
}
