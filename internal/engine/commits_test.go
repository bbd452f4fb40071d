package engine

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice"
)

// TestTrackerMatchesAModel drives the tracker with random deliveries,
// splits (Retain), batches (join) and completions, in random order, and
// checks after every step that the committable offset is exactly 1 + the
// last offset of the longest fully completed prefix, and that the budget
// callback accounts for every record once.
func TestTrackerMatchesAModel(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var released int
		tr := newTracker(&segmentPool{}, func(n int, _ int64) { released += n })

		var offsets []int64              // by sequence number
		var live []Ticket                // tickets held by "values" in flight
		members := map[Ticket][]uint64{} // joined ticket -> member seqs (with multiplicity)
		offset := int64(0)

		// model's view of who a ticket refers to
		seqsOf := func(tk Ticket) []uint64 {
			if tk.joined() {
				return members[tk]
			}
			return []uint64{tk.id - 1}
		}
		for step := 0; step < 400; step++ {
			switch op := rng.IntN(10); {
			case op < 3: // deliver 1..5 records, with gaps in offsets
				n := 1 + rng.IntN(5)
				batch := make([]Record, n)
				for i := range batch {
					offset += 1 + int64(rng.IntN(3))
					batch[i] = Record{Offset: offset}
				}
				first := tr.add(batch)
				for i := range batch {
					offsets = append(offsets, batch[i].Offset)
					live = append(live, ticketAt(first+uint64(i)))
				}
			case op < 5 && len(live) > 0: // split a value into k+1
				i := rng.IntN(len(live))
				k := 1 + rng.IntN(3)
				if f := tr.retain(live[i], k); f != nil {
					t.Fatalf("seed %d step %d: retain of a live ticket: fault %v", seed, step, f.kind)
				}
				for range k {
					live = append(live, live[i])
				}
			case op < 6 && len(live) > 1: // batch 2..4 values into one
				n := min(len(live), 2+rng.IntN(3))
				rng.Shuffle(len(live), func(a, b int) { live[a], live[b] = live[b], live[a] })
				parts := append([]Ticket(nil), live[:n]...)
				live = live[n:]
				j, f := tr.join(parts)
				if f != nil {
					t.Fatalf("seed %d step %d: join of live tickets: fault %v", seed, step, f.kind)
				}
				var ms []uint64
				for _, p := range parts {
					ms = append(ms, seqsOf(p)...)
				}
				members[j] = ms
				live = append(live, j)
			case len(live) > 0: // complete a random value
				i := rng.IntN(len(live))
				tk := live[i]
				live = append(live[:i], live[i+1:]...)
				if f := tr.done(tk); f != nil {
					t.Fatalf("seed %d step %d: completion of a live ticket: fault %v", seed, step, f.kind)
				}
			}
			// The model: a record is done when no live value refers to
			// it, directly or through a batch; the committable offset
			// follows the longest done prefix.
			held := map[uint64]bool{}
			for _, l := range live {
				for _, s := range seqsOf(l) {
					held[s] = true
				}
			}
			want := int64(-1)
			done := 0
			for s, off := range offsets {
				if held[uint64(s)] {
					break
				}
				want = off + 1
				done++
			}
			tr.mu.Lock()
			early := 0
			for i := range tr.size {
				if tr.q.at(tr.base+uint64(i)).refs == 0 {
					early++
				}
			}
			if early != tr.early {
				t.Fatalf("seed %d step %d: %d live slots completed, tracker counts %d", seed, step, early, tr.early)
			}
			tr.mu.Unlock()
			if got := tr.committable(); got != want {
				t.Fatalf("seed %d step %d: committable %d, model %d", seed, step, got, want)
			}
			if released != done {
				t.Fatalf("seed %d step %d: released %d records, model %d", seed, step, released, done)
			}
		}
	}
}

// Split hands one reference of a joined ticket back as one reference to
// each member: members then complete one by one, and a second holder of
// the joined ticket still holds every member.
func TestTrackerSplitHandsAJoinBackAsItsMembers(t *testing.T) {
	tr := newTracker(&segmentPool{}, func(int, int64) {})
	first := tr.add([]Record{{Offset: 10}, {Offset: 11}, {Offset: 12}})
	ts := []Ticket{ticketAt(first), ticketAt(first + 1), ticketAt(first + 2)}
	j, _ := tr.join(slices.Clone(ts))
	tr.retain(j, 1) // a second holder, as after a FlatMap

	if got, _ := tr.split(ticketAt(first), 1); got != nil {
		t.Fatalf("split of a record ticket returned %v, want nil", got)
	}
	if got, _ := tr.split(j, 2); got != nil {
		t.Fatalf("split of a join of 3 as 2 returned %v, want nil", got)
	}
	got, _ := tr.split(j, 3)
	if !slices.Equal(got, ts) {
		t.Fatalf("split returned %v, want the members %v in order", got, ts)
	}
	tr.done(got[1])
	tr.done(got[0])
	if c := tr.committable(); c != -1 {
		t.Fatalf("committable %d while the second holder of the join holds every member, want -1", c)
	}
	tr.done(j)
	if c := tr.committable(); c != 12 {
		t.Fatalf("committable %d, want 12 (offsets 10 and 11 done, 12 still held by its split ticket)", c)
	}
	tr.done(got[2])
	if c := tr.committable(); c != 13 {
		t.Fatalf("committable %d, want 13", c)
	}
}

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

// With a completion hook, the committable offset (what Group.Offsets hands
// the source to commit on its interval) moves past records only once
// OnRecordsCompleted was told about them: a commit of records the hook
// has not counted yet must not be seen.
func TestTrackerCommittableWaitsForTheHook(t *testing.T) {
	var released atomic.Int64
	inHook, leave := make(chan struct{}), make(chan struct{})
	tr, first := hookTracker(1, &released, func(int, int64) {
		inHook <- struct{}{}
		<-leave
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.done(first)
	}()
	<-inHook
	if c := tr.committable(); c != -1 {
		t.Errorf("during the OnRecordsCompleted call for offset 0, committable is %d, want -1: the offset would be committed before the hook counted its record", c)
	}
	close(leave)
	<-done
	if c := tr.committable(); c != 1 {
		t.Fatalf("after the call, committable is %d, want 1", c)
	}
}

// Records that complete on another goroutine during an OnRecordsCompleted
// call that then panics wait for the next completion to be reported; when
// none comes because the partition's graph is dropped (a hook panic stops
// Run), drop still returns their budget: every record admitted comes back.
func TestTrackerDropReturnsBudgetLeftByAPanickingReport(t *testing.T) {
	var released atomic.Int64
	inHook, leave := make(chan struct{}), make(chan struct{})
	tr, first := hookTracker(2, &released, func(_ int, next int64) {
		if next == 1 {
			inHook <- struct{}{}
			<-leave
			panic("hook")
		}
	})
	panicked := make(chan struct{})
	go func() {
		defer close(panicked)
		defer func() { _ = recover() }()
		tr.done(first)
	}()
	<-inHook
	tr.done(Ticket{id: first.id + 1}) // during the call: left to the reporter
	close(leave)
	<-panicked
	n, _ := tr.drop()
	if got := released.Load() + int64(n); got != 2 {
		t.Fatalf("budget of %d records returned (%d by completions, %d by drop), want 2", got, released.Load(), n)
	}
}

// In share mode a record's acknowledgement is its commit: the records a
// completion reports are acknowledged only after OnRecordsCompleted
// counted them.
func TestTrackerShareAcksFollowTheHook(t *testing.T) {
	var released atomic.Int64
	share := &shareAcks{rt: &Group{}}
	var pushedDuringHook int
	tr, first := hookTracker(1, &released, func(int, int64) {
		share.mu.Lock()
		pushedDuringHook = len(share.acks)
		share.mu.Unlock()
	})
	tr.share = share
	tr.done(first)
	if pushedDuringHook != 0 {
		t.Errorf("%d acknowledgements were pushed before OnRecordsCompleted counted their record", pushedDuringHook)
	}
	if len(share.acks) != 1 || share.acks[0].Offset != 0 || share.acks[0].Outcome != sluice.AckAccepted {
		t.Errorf("acks after the completion = %v, want offset 0 accepted", share.acks)
	}
}
