package stages_test

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
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

// commitWatch checks every commit and every completion report as it
// happens, not only where the offsets end up: an offset committed (or
// reported complete by OnRecordsCompleted) must have every record below
// it finished, its Each call returned or its dead letter delivered, at
// some point before. A commit that passes a record still in a worker,
// kept by a stage or waiting for its dead letter, and later catches up
// with the records, is invisible to a test that only waits for the final
// offsets.
type commitWatch struct {
	t  testing.TB
	mu sync.Mutex
	// finished[p][o]: offset o of partition p reached the end (set before
	// the call or the dead-letter destination returned).
	finished [4]map[int64]bool
	// checked[p]: every offset below it was found finished already.
	checked  [4]int64
	attempts [4]map[int64]int
	bad      int
}

func newCommitWatch(t testing.TB) *commitWatch {
	w := &commitWatch{t: t}
	for i := range w.finished {
		w.finished[i] = map[int64]bool{}
		w.attempts[i] = map[int64]int{}
	}
	return w
}

// attempt counts a call for r and returns its number (from 1), per
// ownership or not: a record delivered again after a revoke or a loss
// succeeds at once if it failed before.
func (w *commitWatch) attempt(r sluice.Record) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts[r.Partition][r.Offset]++
	return w.attempts[r.Partition][r.Offset]
}

func (w *commitWatch) finish(p int32, o int64) {
	w.mu.Lock()
	w.finished[p][o] = true
	w.mu.Unlock()
}

// check fails the test if offset next of p passes a record not finished.
func (w *commitWatch) check(what string, tp sluice.TopicPartition, next int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := tp.Partition
	for o := w.checked[p]; o < next; o++ {
		if !w.finished[p][o] {
			if w.bad++; w.bad <= 5 {
				w.t.Errorf("%s: partition %d at %d, past offset %d that never reached the end", what, p, next, o)
			}
			return
		}
		w.checked[p] = o + 1
	}
}

func (w *commitWatch) OnCommitted(offs []sluice.Offset, _ time.Duration, err error) {
	if err != nil {
		return
	}
	for _, o := range offs {
		w.check("commit", o.TopicPartition, o.Next)
	}
}

func (w *commitWatch) OnRecordsCompleted(tp sluice.TopicPartition, _ int, next int64) {
	w.check("completion report", tp, next)
}

// Mixed paces in fake time on two partitions, with every commit and every
// completion report watched as it happens (commitWatch): a Pool whose
// calls are fast, slow, blocked past the hedge, retried or invalid (dead
// lettered) feeds an Each whose fast calls are kept and completed in
// groups; meanwhile partitions are revoked and assigned again, and lost
// and assigned again. No commit and no report may pass a record that did
// not reach the end; in the end every offset is committed.
func TestPoolEachCommitsNeverPassAnUnfinishedRecord(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		for seedNo := range 8 {
			t.Run(fmt.Sprintf("%d/%d", workers, seedNo), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					seed := maphash.MakeSeed()
					w := newCommitWatch(t)
					h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
						pooled := stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
							return r, nil
						})
						pooled = stages.Pool(pooled, workers, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
							return r, paceOf(seed, r.Offset*7+int64(r.Partition)).call(w.attempt(r))
						}, stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: 2 * time.Millisecond, Max: 2 * time.Millisecond}))
						return stages.Each(pooled, func(_ context.Context, r sluice.Record) error {
							w.finish(r.Partition, r.Offset)
							return nil
						})
					}, pipeline.WithDeadLetter(func(_ context.Context, d sluice.DeadLetter) error {
						w.finish(d.Record.Partition, d.Record.Offset)
						return nil
					}), pipeline.WithHooks(w))
					h.Assign("t", 0, 1)
					total := [2]int{}
					for r := range 120 {
						v, p, s := sendAndChurn(h, seed, r, 2, 40, 16)
						total[p] += s
						if g := time.Duration(v>>20%4) * time.Millisecond; g > 0 && v%2 == 0 {
							time.Sleep(g)
						}
					}
					h.WaitCommitted("t", 0, int64(total[0]))
					h.WaitCommitted("t", 1, int64(total[1]))
					stopClean(t, h)
					w.check("end", sluice.TopicPartition{Topic: "t", Partition: 0}, int64(total[0]))
					w.check("end", sluice.TopicPartition{Topic: "t", Partition: 1}, int64(total[1]))
				})
			})
		}
	}
}

// The same in real time on four partitions, with a PoolByKey after the Pool, so that real schedules
// interleave the Pools' dispatchers, reliefs, hedges, workers and
// emitters, Each's kept groups and the runtime's flushes of them (commits,
// admission, revokes, losses) with every commit watched. time.Sleep in a
// call stands for its duration, and between sends for a gap in the input.
func TestPoolEachCommitsNeverPassAnUnfinishedRecordInRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			seed := maphash.MakeSeed()
			w := newCommitWatch(t)
			h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				pooled := stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
					return r, paceOf(seed, r.Offset*7+int64(r.Partition)).call(w.attempt(r))
				}, stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond, Max: time.Millisecond}))
				pooled = stages.PoolByKey(pooled, workers+1, func(r sluice.Record) string { return strconv.FormatInt(r.Offset%5, 10) },
					func(_ context.Context, r sluice.Record) (sluice.Record, error) {
						if r.Offset%23 == 0 {
							time.Sleep(300 * time.Microsecond)
						}
						return r, nil
					})
				return stages.Each(pooled, func(_ context.Context, r sluice.Record) error {
					w.finish(r.Partition, r.Offset)
					return nil
				})
			}, pipeline.WithDeadLetter(func(_ context.Context, d sluice.DeadLetter) error {
				w.finish(d.Record.Partition, d.Record.Offset)
				return nil
			}), pipeline.WithHooks(w), pipeline.WithMaxInFlight(300))
			h.Assign("t", 0, 1, 2, 3)
			total := [4]int{}
			for r := range 400 {
				v, p, s := sendAndChurn(h, seed, r, 4, 60, 32)
				total[p] += s
				if v>>20%8 == 0 {
					time.Sleep(time.Duration(v>>24%3) * 500 * time.Microsecond)
				}
			}
			for p := range int32(4) {
				h.WaitCommitted("t", p, int64(total[p]))
			}
			stopClean(t, h)
			for p := range int32(4) {
				w.check("end", sluice.TopicPartition{Topic: "t", Partition: p}, int64(total[p]))
			}
		})
	}
}

// sendAndChurn sends the r-th burst of records, drawn from seed: 1 to
// most values to one of parts partitions, which is then revoked and
// assigned again, or lost and assigned again, once in churnOneIn bursts
// each. It returns the draw (for the caller's own choices), the partition
// and the values sent.
func sendAndChurn(h *testkit.Harness, seed maphash.Seed, r, parts, most int, churnOneIn uint64) (v uint64, p int32, n int) {
	v = maphash.Comparable(seed, -int64(r)-1)
	p = int32(v % uint64(parts))
	n = 1 + int(v>>4%uint64(most))
	h.Send("t", p, testkit.Values(n)...)
	switch v >> 12 % churnOneIn {
	case 0:
		h.Revoke("t", p)
		h.Assign("t", p)
	case 1:
		h.Lose("t", p)
		h.Assign("t", p)
	}
	return v, p, n
}

// completionReports checks the contract of OnRecordsCompleted per
// partition: one call at a time, next increasing within an ownership, and
// n the records between two calls' next (testkit's offsets have no gaps).
type completionReports struct {
	t     testing.TB
	mu    sync.Mutex
	in    [4]bool
	next  [4]int64 // -1: no call in this ownership yet
	total [4]int
	bad   int
}

func newCompletionReports(t testing.TB) *completionReports {
	c := &completionReports{t: t}
	for i := range c.next {
		c.next[i] = -1
	}
	return c
}

func (c *completionReports) errorf(format string, args ...any) {
	if c.bad++; c.bad <= 5 {
		c.t.Errorf(format, args...)
	}
}

func (c *completionReports) OnPartitionAssigned(tp sluice.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next[tp.Partition] = -1
}

func (c *completionReports) OnRecordsCompleted(tp sluice.TopicPartition, n int, next int64) {
	p := tp.Partition
	c.mu.Lock()
	if c.in[p] {
		c.errorf("partition %d: a completion report (n %d, next %d) while another runs", p, n, next)
	}
	c.in[p] = true
	prev := c.next[p]
	switch {
	case n <= 0:
		c.errorf("partition %d: a completion report of %d records (next %d)", p, n, next)
	case prev >= 0 && next <= prev:
		c.errorf("partition %d: next %d after %d", p, next, prev)
	case prev >= 0 && int64(n) != next-prev:
		c.errorf("partition %d: %d records reported from %d to %d", p, n, prev, next)
	}
	c.next[p] = next
	c.total[p] += n
	c.mu.Unlock()
	runtime.Gosched() // leave room for a report that should wait for this one
	c.mu.Lock()
	c.in[p] = false
	c.mu.Unlock()
}

// The completion reports of a Pool→Each graph whose Each keeps its values
// while the runtime completes them from the poll goroutine (commits,
// admissions into a small budget) and the feeder: one at a time per
// partition, next increasing, n exact.
func TestPoolEachCompletionReportsInRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	seed := maphash.MakeSeed()
	c := newCompletionReports(t)
	h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		pooled := stages.Pool(in, 2, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			switch paceOf(seed, r.Offset*5+int64(r.Partition)) {
			case paceHedged, paceBlocked:
				time.Sleep(1500 * time.Microsecond)
			case paceSlower:
				time.Sleep(50 * time.Microsecond)
			}
			return r, nil
		})
		return stages.Each(pooled, func(context.Context, sluice.Record) error { return nil })
	}, pipeline.WithHooks(c), pipeline.WithMaxInFlight(200))
	h.Assign("t", 0, 1, 2, 3)
	total := [4]int{}
	for r := range 600 {
		v := maphash.Comparable(seed, -int64(r)-1)
		p := int32(v % 4)
		s := 1 + int(v>>4%100)
		h.Send("t", p, testkit.Values(s)...)
		total[p] += s
	}
	for p := range int32(4) {
		h.WaitCommitted("t", p, int64(total[p]))
	}
	stopClean(t, h)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range 4 {
		if c.total[p] != total[p] {
			t.Errorf("partition %d: %d records reported complete, want %d", p, c.total[p], total[p])
		}
	}
}
