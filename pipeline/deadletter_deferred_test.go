package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// outcome is a deferred dead letter whose outcome the test, or a timer,
// sets.
type outcome struct{ res chan error }

func newOutcome() *outcome { return &outcome{res: make(chan error, 1)} }

func (o *outcome) Ready() bool { return len(o.res) > 0 }
func (o *outcome) Wait() error { return <-o.res }

// deferring is a dead-letter destination that defers every outcome it
// can (engine.DeferDeadLetter, as the Kafka destinations do) and
// succeeds at once when Run wants the outcome from the call. It records
// its calls in order: the offset, followed by "s" for a call that could
// not defer.
type deferring struct {
	mu       sync.Mutex
	calls    []string
	outcomes map[int64]*outcome
}

func newDeferring() *deferring { return &deferring{outcomes: map[int64]*outcome{}} }

func (d *deferring) fn(ctx context.Context, dl sluice.DeadLetter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := newOutcome()
	if !engine.DeferDeadLetter(ctx, o) {
		d.calls = append(d.calls, fmt.Sprintf("%ds", dl.Record.Offset))
		return nil
	}
	d.calls = append(d.calls, fmt.Sprint(dl.Record.Offset))
	d.outcomes[dl.Record.Offset] = o
	return nil
}

// settle sets the outcome of the dead letters of offsets: err, nil for
// delivered.
func (d *deferring) settle(err error, offsets ...int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, off := range offsets {
		d.outcomes[off].res <- err
	}
}

func (d *deferring) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.calls, " ")
}

// invalidEverything finds every record invalid.
func invalidEverything(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		return r, sluice.Invalid(errors.New("bad"))
	}, stages.Name("parse")))
}

// expect checks, once everything settled, the destination's calls and
// t/0's committed offset.
func expect(t *testing.T, h *testkit.Harness, d *deferring, calls string, committed int64) {
	t.Helper()
	synctest.Wait()
	if got := d.String(); got != calls {
		t.Fatalf("dead-letter calls %q, want %q", got, calls)
	}
	if got := h.Committed("t", 0); got != committed {
		t.Fatalf("committed %d, want %d (calls %q)", got, committed, calls)
	}
}

// startDeferring runs invalidEverything with a deferring destination
// over a Harness, assigns t/0 and sends it n records, and checks that
// all n were handed over, in order, and nothing committed.
func startDeferring(t *testing.T, n int) (*testkit.Harness, *deferring) {
	t.Helper()
	d := newDeferring()
	h := testkit.New(t, invalidEverything, pipeline.WithDeadLetter(d.fn))
	assignAndSend(h, n)
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprint(i)
	}
	expect(t, h, d, strings.Join(calls, " "), -1)
	return h, d
}

// A deferred dead letter that failed holds the commit at its record; no
// new dead letter is handed over until the outcome of every outstanding
// one is known; then the failed one is retried under the retry policy
// with a call that cannot defer, and the queued ones follow.
func TestDeferredDeadLetterFailureIsRetriedOnceTheOthersSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startDeferring(t, 6)
		d.settle(nil, 0, 1)
		d.settle(errFlaky, 2)
		expect(t, h, d, "0 1 2 3 4 5", 2)
		h.Send("t", 0, testkit.Values(2)...) // offsets 6 and 7: queued behind the failure
		d.settle(nil, 3, 4)
		expect(t, h, d, "0 1 2 3 4 5", 2)
		d.settle(nil, 5) // every outcome known: 2 is retried after its backoff, then 6 and 7 go
		h.WaitCommitted("t", 0, 6)
		expect(t, h, d, "0 1 2 3 4 5 2s 6 7", 6)
		d.settle(nil, 7)
		expect(t, h, d, "0 1 2 3 4 5 2s 6 7", 6)
		d.settle(nil, 6)
		expect(t, h, d, "0 1 2 3 4 5 2s 6 7", 8)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop returned %v", err)
		}
	})
}

// Deferred dead letters that fail for good stop Run with a StageError at
// the first of them, naming the others; the commit stays at its record,
// although dead letters after it were delivered.
func TestDeferredDeadLetterPermanentFailureStopsRunAtTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startDeferring(t, 6)
		errRefused := sluice.Permanent(errors.New("record refused"))
		d.settle(errRefused, 4)
		d.settle(nil, 0, 1, 3, 5)
		d.settle(errRefused, 2)
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, sluice.ErrNotDeadLettered) || se.Offset != 2 || se.Stage != "parse" ||
			!strings.Contains(err.Error(), "offsets [4]") {
			t.Fatalf("Run returned %v; want a StageError of parse at offset 2 wrapping ErrNotDeadLettered, naming offset 4", err)
		}
		checkCommitted(t, h, 2, "")
		if got := d.String(); got != "0 1 2 3 4 5" {
			t.Fatalf("dead-letter calls %q, want no retry of a permanent failure", got)
		}
	})
}

// A shutdown waits for the outcomes of the dead letters handed over
// before the partition is let go, and commits them.
func TestShutdownWaitsForDeferredDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startDeferring(t, 3)
		stopped := make(chan error, 1)
		go func() { stopped <- h.Stop() }()
		synctest.Wait()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned %v before the dead letters' outcomes", err)
		default:
		}
		d.settle(nil, 2, 1, 0)
		if err := <-stopped; err != nil {
			t.Fatalf("Stop returned %v", err)
		}
		checkCommitted(t, h, 3, "")
	})
}

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
		o := newOutcome()
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
	o := newOutcome()
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
			h.Send("t", 0, testkit.Values(100)...)
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
