package pipeline_test

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
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// slowOutcome is a deferred dead letter settled by a timer.
type slowOutcome struct{ res chan error }

func (o *slowOutcome) Ready() bool { return len(o.res) > 0 }
func (o *slowOutcome) Wait() error { return <-o.res }

// asyncDest defers every dead letter it can; each outcome arrives after
// a pseudo-random delay and every fifth first attempt fails transiently.
// It keeps the offsets of first calls in order and counts deliveries.
type asyncDest struct {
	mu        sync.Mutex
	n         int
	first     []int64
	seen      map[int64]bool
	delivered map[int64]int
	info      map[int64]string
	noFail    bool // every outcome is a success, at once
	noRecord  bool // keep no per-offset state (long runs)
}

func newAsyncDest() *asyncDest {
	return &asyncDest{seen: map[int64]bool{}, delivered: map[int64]int{}}
}

func (d *asyncDest) fn(ctx context.Context, dl sluice.DeadLetter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	off := dl.Record.Offset
	if d.noRecord {
		o := &slowOutcome{res: make(chan error, 1)}
		o.res <- nil
		engine.DeferDeadLetter(ctx, o)
		return nil
	}
	if !d.noFail {
		if d.info == nil {
			d.info = map[int64]string{}
		}
		d.info[off] += fmt.Sprintf("[%s %v val=%s]", dl.Stage, dl.Err, dl.Record.Value)
	}
	d.n++
	fail := false
	if !d.seen[off] {
		d.seen[off] = true
		d.first = append(d.first, off)
		fail = d.n%5 == 0 && !d.noFail
	}
	var err error
	if fail {
		err = errFlaky
	}
	o := &slowOutcome{res: make(chan error, 1)}
	if !engine.DeferDeadLetter(ctx, o) {
		if err == nil {
			d.delivered[off]++
		}
		return err
	}
	delay := time.Duration((d.n*7919)%13) * time.Millisecond
	if d.noFail {
		delay = 0
	}
	go func() {
		time.Sleep(delay)
		if err == nil {
			d.mu.Lock()
			d.delivered[off]++
			d.mu.Unlock()
		}
		o.res <- err
	}()
	return nil
}

// invalidLog collects the offsets the graph found invalid.
type invalidLog struct {
	mu   sync.Mutex
	offs map[int64]bool
}

func (l *invalidLog) add(offs ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range offs {
		l.offs[o] = true
	}
}

// Records found invalid out of offset order (a pool of 8 with uneven
// work), in two branches of a Tee, whole batches and elements of
// unbatched batches, some of them several times: every record found
// invalid is delivered exactly once, first handed over in offset order,
// while deferred outcomes arrive out of order and some fail and are
// retried; the partition commits exactly to its end.
func TestDeadLettersFoundOutOfOrderAreDeliveredOnceInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		d := newAsyncDest()
		inv := &invalidLog{offs: map[int64]bool{}}
		h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			pooled := stages.Pool(in, 8, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				time.Sleep(time.Duration((r.Offset*31)%17) * time.Millisecond)
				if r.Offset%9 == 1 {
					inv.add(r.Offset)
					return r, sluice.Invalid(errors.New("pool"))
				}
				return r, nil
			}, stages.Name("pool"))
			br := stages.Tee(pooled, 3)
			a := stages.Each(stages.Unbatch(stages.Batch(br[0], 4, time.Millisecond)), func(_ context.Context, r sluice.Record) error {
				if r.Offset%7 == 3 {
					inv.add(r.Offset)
					return sluice.Invalid(errors.New("elem"))
				}
				return nil
			}, stages.Name("elem"))
			c := stages.Each(stages.Batch(br[2], 4, time.Millisecond), func(_ context.Context, b []sluice.Record) error {
				for _, r := range b {
					if r.Offset%23 == 5 {
						for _, r := range b {
							inv.add(r.Offset)
						}
						return sluice.Invalid(errors.New("batch"))
					}
				}
				return nil
			}, stages.Name("batch"))
			twice := stages.FlatMap(br[1], func(_ context.Context, r sluice.Record) ([]sluice.Record, error) {
				return []sluice.Record{r, r}, nil
			}, stages.Name("twice"))
			b := stages.Each(twice, func(_ context.Context, r sluice.Record) error {
				if r.Offset%5 == 2 || r.Offset%7 == 3 {
					inv.add(r.Offset)
					return sluice.Invalid(errors.New("copy"))
				}
				return nil
			}, stages.Name("copies"))
			return pipeline.All(a, b, c)
		}, pipeline.WithDeadLetter(d.fn))
		h.Assign("t", 0)
		for i := 0; i < n; i += 100 {
			h.Send("t", 0, values(100)...)
		}
		h.WaitCommitted("t", 0, n)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop returned %v", err)
		}
		if got := h.Committed("t", 0); got != n {
			t.Fatalf("committed %d, want %d", got, n)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if !slices.IsSorted(d.first) {
			t.Errorf("first calls out of offset order: %v", d.first)
		}
		var want []int64
		for off := range inv.offs {
			want = append(want, off)
		}
		slices.Sort(want)
		var problems []string
		for _, off := range want {
			if c := d.delivered[off]; c != 1 {
				problems = append(problems, fmt.Sprintf("%d delivered %d times", off, c))
			}
		}
		for off := range d.delivered {
			if !inv.offs[off] {
				problems = append(problems, fmt.Sprintf("%d delivered but never found invalid %s", off, d.info[off]))
			}
		}
		if len(problems) > 0 {
			t.Fatalf("%d invalid records: %v", len(want), problems)
		}
		t.Logf("%d invalid records of %d, %d calls", len(want), n, d.n)
	})
}
