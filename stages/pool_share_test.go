package stages_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// The tests of this file run an unkeyed Pool in a share group, whose
// records are acknowledged one by one (docs/share.md): the calls the
// pool makes on the goroutine taking its input, and on a relief of it,
// must settle every record exactly once: accepted once its call returned
// and every value before it was emitted, released when its retries ran
// out, rejected when invalid without a dead-letter destination; and a
// shutdown must release only what did not finish.

// shareCalls counts the calls of a pool per offset (share mode: one
// partition, t/0) and notes on which goroutine the watched ones ran.
type shareCalls struct {
	mu       sync.Mutex
	calls    map[int64]int
	onRelief map[int64]bool
}

func newShareCalls() *shareCalls {
	return &shareCalls{calls: map[int64]int{}, onRelief: map[int64]bool{}}
}

// call counts a call of o and returns which one it is (from 1); watched
// calls also note whether they run on a relief dispatcher.
func (c *shareCalls) call(o int64, watch bool) int {
	rel := watch && onRelief()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[o]++
	if watch {
		c.onRelief[o] = rel
	}
	return c.calls[o]
}

func (c *shareCalls) count(o int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[o]
}

func (c *shareCalls) relief(o int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.onRelief[o]
}

// produceShare appends n records to t/0 of d.
func produceShare(t *testing.T, d *sourcetest.FakeShareDriver, n int) {
	recs := make([]sluice.Record, n)
	for i := range recs {
		recs[i].Value = []byte("v")
	}
	d.Produce(t, "t", recs...)
}

// checkShareOutcomes checks the outcomes the source took for offsets 0 to
// n-1 of t/0 against want.
func checkShareOutcomes(t *testing.T, src *sourcetest.CheckedShareSource, n int64, want func(o int64) []sluice.AckOutcome) {
	t.Helper()
	bad := 0
	for o := range n {
		got, deliveries := src.Group().Outcomes(sluice.TopicPartition{Topic: "t"}, o)
		if w := want(o); !slices.Equal(got, w) {
			if bad++; bad <= 8 {
				t.Errorf("t/0@%d: outcomes %v (delivered %d times), want %v", o, got, deliveries, w)
			}
		}
	}
	if bad > 8 {
		t.Errorf("... %d records in all with the wrong outcomes", bad)
	}
}

// In a share group, calls on the pool's goroutine and on its reliefs
// settle every record once: batches of 32 records (the fake share
// source's polls) where, in each of four batches, one record is invalid
// (rejected: no dead-letter destination) and one fails its only attempt
// (released, delivered again and then accepted), and where a call of 3 ms
// on the pool's goroutine (second batch) and one on its relief (fourth
// batch) have the hedge hand the input over. Every other record is called
// once and accepted once.
func TestPoolShareSettlesEachRecordOnceAcrossReliefs(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const batches = 5
				const total = batches * 32
				invalid := func(o int64) bool { return o%32 == 5 && o < 4*32 }
				flaky := func(o int64) bool { return o%32 == 9 && o < 4*32 }
				slowAt := map[int64]bool{32 + 12: true, 3*32 + 12: true}
				calls := newShareCalls()
				d := sourcetest.NewFakeShareDriver()
				d.CreateTopic(t, "t", 1)
				src := sourcetest.CheckShare(d.NewShareSource(t, "g", "t"))
				r := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
						k := calls.call(r.Offset, slowAt[r.Offset])
						switch {
						case slowAt[r.Offset]:
							time.Sleep(3 * time.Millisecond)
						case invalid(r.Offset):
							return 0, sluice.Invalid(errors.New("bad"))
						case flaky(r.Offset) && k == 1:
							return 0, errors.New("try again")
						}
						return r.Offset, nil
					}, stages.Name("score")))
				}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1}), pipeline.WithDrainTimeout(4*time.Second))
				for range batches {
					produceShare(t, d, 32)
					time.Sleep(10 * time.Millisecond)
					synctest.Wait()
				}
				r.WaitUntil(t, "every record acknowledged", func() bool { return d.Unacknowledged(t, "g", "t")[0] == 0 })
				if err := r.Stop(t); err != nil {
					t.Fatalf("Run returned %v, want nil", err)
				}
				src.Verify(t)
				checkShareOutcomes(t, src, total, func(o int64) []sluice.AckOutcome {
					switch {
					case invalid(o):
						return []sluice.AckOutcome{sluice.AckRejected}
					case flaky(o):
						return []sluice.AckOutcome{sluice.AckReleased, sluice.AckAccepted}
					}
					return []sluice.AckOutcome{sluice.AckAccepted}
				})
				for o := range int64(total) {
					want := 1
					if flaky(o) {
						want = 2
					}
					if got := calls.count(o); got != want {
						t.Errorf("offset %d called %d times, want %d", o, got, want)
					}
				}
				for o := range slowAt {
					t.Logf("offset %d called on a relief: %v", o, calls.relief(o))
				}
			})
		})
	}
}

// In a share group, a shutdown while a call that ignores its context
// blocks on a relief dispatcher (the pool's goroutine was relieved before,
// by a call of 3 ms): every record whose value was emitted before it is
// accepted once, the blocked record and those after it are released (the
// source gives them back), Run returns the abandoned call's error, and no
// record is settled twice.
func TestPoolShareShutdownWhileACallBlocksOnARelief(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				first, stuck := int64(32+12), int64(3*32+20)
				release := make(chan struct{})
				calls := newShareCalls()
				d := sourcetest.NewFakeShareDriver()
				d.CreateTopic(t, "t", 1)
				src := sourcetest.CheckShare(d.NewShareSource(t, "g", "t"))
				r := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, workers, func(_ context.Context, r sluice.Record) (int64, error) {
						calls.call(r.Offset, r.Offset == first || r.Offset == stuck)
						switch r.Offset {
						case first:
							time.Sleep(3 * time.Millisecond)
						case stuck:
							<-release // ignores its context
						}
						return r.Offset, nil
					}, stages.Name("score")))
				}, pipeline.WithDrainTimeout(4*time.Second))
				for range 4 {
					produceShare(t, d, 32)
					time.Sleep(10 * time.Millisecond)
					synctest.Wait()
				}
				if !calls.relief(stuck) {
					t.Errorf("offset %d was not called on a relief dispatcher", stuck)
				}
				if got, want := d.Unacknowledged(t, "g", "t")[0], 4*32-stuck; got != want {
					t.Errorf("%d records unacknowledged while offset %d blocks, want %d", got, stuck, want)
				}
				err := r.Stop(t)
				var se *sluice.StageError
				if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) || se.Offset != stuck {
					t.Errorf("Run returned %v, want a *StageError wrapping ErrAbandoned at offset %d", err, stuck)
				}
				src.Verify(t)
				checkShareOutcomes(t, src, 4*32, func(o int64) []sluice.AckOutcome {
					if o < stuck {
						return []sluice.AckOutcome{sluice.AckAccepted}
					}
					return nil // released by the source at shutdown: no outcome reported
				})
				if got, want := d.Unacknowledged(t, "g", "t")[0], 4*32-stuck; got != want {
					t.Errorf("%d records left unacknowledged (released), want %d", got, want)
				}
				for o := range int64(4 * 32) {
					if got := calls.count(o); got > 1 || (o <= stuck && got != 1) {
						t.Errorf("offset %d called %d times, want once (at most once after %d)", o, got, stuck)
					}
				}
				close(release)
				synctest.Wait()
			})
		})
	}
}
