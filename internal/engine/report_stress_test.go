package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Completions from many goroutines, some through joined tickets, while
// the hook sometimes yields inside its call (widening the window in which
// the reporter hands its role back): every OnRecordsCompleted call is
// alone, next strictly increases, every record is reported once, and at
// every moment the budget returned covers no record the hook has not
// been told about.
func TestTrackerReportStressBudgetNeverAheadOfHook(t *testing.T) {
	const goroutines, per = 8, 1500
	total := goroutines * per
	var reported, released atomic.Int64
	var inCall atomic.Int32
	var mu sync.Mutex
	last := int64(-1)
	tr := newTracker(&segmentPool{}, func(n int, b int64) {
		if r, got := reported.Load(), released.Add(int64(n)); got > r {
			t.Errorf("budget of %d records returned while the hook was told of %d", got, r)
		}
		if b != int64(n)*RecordOverhead {
			t.Errorf("onDone(%d, %d): want %d bytes", n, b, int64(n)*RecordOverhead)
		}
	})
	calls := 0
	tr.onCompleted = func(n int, next int64) {
		if inCall.Add(1) != 1 {
			t.Error("two OnRecordsCompleted calls overlap")
		}
		mu.Lock()
		if next <= last {
			t.Errorf("next %d after %d: not increasing", next, last)
		}
		last = next
		calls++
		if calls%7 == 0 {
			runtime.Gosched()
		}
		mu.Unlock()
		reported.Add(int64(n))
		inCall.Add(-1)
	}
	recs := make([]Record, total)
	for i := range recs {
		recs[i].Offset = int64(i)
	}
	first := ticketAt(tr.add(recs))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			// Goroutine g owns records g, g+goroutines, ...; every fourth
			// pair it joins into one ticket and completes that instead.
			for i := 0; i < per; i++ {
				ti := Ticket{id: first.id + uint64(i*goroutines+g)}
				if i%4 == 0 && i+1 < per {
					tj := Ticket{id: first.id + uint64((i+1)*goroutines+g)}
					j, f := tr.join([]Ticket{ti, tj})
					if f != nil {
						t.Errorf("join: fault %v", f.kind)
						return
					}
					if f := tr.done(j); f != nil {
						t.Errorf("done of a join: fault %v", f.kind)
					}
					i++
					continue
				}
				if f := tr.done(ti); f != nil {
					t.Errorf("done: fault %v", f.kind)
				}
			}
		})
	}
	wg.Wait()
	if got := reported.Load(); got != int64(total) {
		t.Fatalf("hook told of %d records, want %d", got, total)
	}
	if got := released.Load(); got != int64(total) {
		t.Fatalf("budget of %d records returned, want %d", got, total)
	}
	mu.Lock()
	defer mu.Unlock()
	if last != int64(total) {
		t.Fatalf("last next %d, want %d", last, total)
	}
	if tr.reporting.Load() || tr.arrived.Load() || tr.unreported != 0 || tr.unreportedBytes != 0 {
		t.Fatalf("after every completion: reporting %v, arrived %v, unreported %d (%d bytes); want all clear",
			tr.reporting.Load(), tr.arrived.Load(), tr.unreported, tr.unreportedBytes)
	}
}
