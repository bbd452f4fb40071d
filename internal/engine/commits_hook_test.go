package engine

import (
	"sync"
	"sync/atomic"
	"testing"
)

// hookTracker returns a tracker of n records (offsets 0 to n-1) whose
// onDone adds to released, with the given onCompleted, and the ticket of
// the first record.
func hookTracker(n int, released *atomic.Int64, onCompleted func(int, int64)) (*tracker, Ticket) {
	tr := newTracker(&segmentPool{}, func(n int, _ int64) { released.Add(int64(n)) })
	tr.onCompleted = onCompleted
	recs := make([]Record, n)
	for i := range recs {
		recs[i].Offset = int64(i)
	}
	return tr, ticketAt(tr.add(recs))
}

// Completions from many goroutines at once reach OnRecordsCompleted one
// call at a time, with next increasing and every record counted once,
// and every record's budget comes back.
func TestTrackerReportsConcurrentCompletionsOnceInOrder(t *testing.T) {
	const goroutines, per = 8, 2000
	var released atomic.Int64
	var inCall atomic.Int32
	var mu sync.Mutex // orders the checks below with -race; calls never wait on it
	reported, last := 0, int64(-1)
	tr, first := hookTracker(goroutines*per, &released, func(n int, next int64) {
		if inCall.Add(1) != 1 {
			t.Error("two OnRecordsCompleted calls of one partition overlap")
		}
		mu.Lock()
		if next <= last {
			t.Errorf("next %d after %d: not increasing", next, last)
		}
		reported, last = reported+n, next
		mu.Unlock()
		inCall.Add(-1)
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			// Goroutine g completes the records g, g+goroutines, ...:
			// completions interleave and each advances next a little.
			for i := range per {
				tr.done(Ticket{id: first.id + uint64(i*goroutines+g)})
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if reported != goroutines*per || last != goroutines*per {
		t.Fatalf("reported %d records up to next %d, want %d up to %d", reported, last, goroutines*per, goroutines*per)
	}
	if got := released.Load(); got != goroutines*per {
		t.Fatalf("budget of %d records returned, want %d", got, goroutines*per)
	}
}

// With a completion hook, a record's budget goes back only after
// OnRecordsCompleted was told about it, also for a record completed on
// another goroutine during the call: returning the budget lets the source
// commit, and a commit must never be seen before the hook counted its
// records (metrics' completed count would lag what was committed).
func TestTrackerReturnsBudgetAfterTheHookCounted(t *testing.T) {
	var released atomic.Int64
	inHook, leave := make(chan int64), make(chan struct{})
	tr, first := hookTracker(2, &released, func(int, int64) {
		inHook <- released.Load()
		<-leave
	})
	go tr.done(first)
	if got := <-inHook; got != 0 {
		t.Fatalf("during the OnRecordsCompleted call for a record, %d records returned to the budget, want 0", got)
	}
	tr.done(Ticket{id: first.id + 1}) // during the call: reported by the call's goroutine
	if got := released.Load(); got != 0 {
		t.Fatalf("a record completed during the hook call returned its budget before it was reported: %d returned, want 0", got)
	}
	leave <- struct{}{}
	if got := <-inHook; got != 1 {
		t.Fatalf("during the second OnRecordsCompleted call, %d records returned to the budget, want 1", got)
	}
	close(leave)
}

// An OnRecordsCompleted hook that panics clears the reporting flag (the
// next completion is reported), and the records of the panicking call
// still return their budget.
func TestTrackerHookPanicReturnsBudgetAndKeepsReporting(t *testing.T) {
	var released atomic.Int64
	var calls []int64
	tr, first := hookTracker(2, &released, func(_ int, next int64) {
		calls = append(calls, next)
		if next == 1 {
			panic("hook")
		}
	})
	func() {
		defer func() { _ = recover() }()
		tr.done(first)
	}()
	tr.done(Ticket{id: first.id + 1})
	if len(calls) != 2 || calls[1] != 2 {
		t.Fatalf("OnRecordsCompleted calls with next %v, want [1 2]: the panic left reporting set", calls)
	}
	if got := released.Load(); got != 2 {
		t.Fatalf("budget of %d records returned, want 2: the completion whose hook panicked kept its records", got)
	}
}

// A panic while the budget is returned (an OnInFlight or
// OnRecordsDelivered hook runs there) does not leave the reporting flag
// set: the records are still reported, and so are later ones.
func TestTrackerBudgetPanicKeepsReporting(t *testing.T) {
	var calls []int64
	tr := newTracker(&segmentPool{}, func(n int, _ int64) { panic("budget hook") })
	tr.onCompleted = func(_ int, next int64) { calls = append(calls, next) }
	first := ticketAt(tr.add(make([]Record, 2)))
	for i := range uint64(2) {
		func() {
			defer func() { _ = recover() }()
			tr.done(Ticket{id: first.id + i})
		}()
	}
	if len(calls) != 2 {
		t.Fatalf("OnRecordsCompleted calls with next %v, want two", calls)
	}
}
