package source

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

type TP = sluice.TopicPartition

// fakeGroup is a sluice.Group that "processes" a record as soon as it is
// delivered. It records every call; start wraps it in sourcetest's
// CheckingGroup, which checks the Source contract, and it checks on top
// what the contract leaves open and these tests' topics promise: every
// Deliver has records, a partition's offsets follow each other with no
// gap, and high watermarks do not move back.
type fakeGroup struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change

	assigned map[TP]bool
	next     map[TP]int64 // next offset after the last delivered record
	reported map[TP]int64 // last value returned by Offsets
	recs     map[TP][]sluice.Record
	total    int

	assigns, revokes, loses [][]TP
	shutdowns               int
	violations              []string

	// pause: Deliver returns true once a partition got pauseEvery records
	// since its last resume (0: never). pausedCh receives each partition
	// Deliver asked to pause; release makes it resumable.
	pauseEvery  int
	sinceResume map[TP]int
	pausing     map[TP]bool
	pauses      int
	pausedCh    chan TP
	resumable   []TP
	wake        chan struct{}

	polls, joins int
	commits      []commitCall
	offsetsCalls int // calls of Offsets
	highs        map[TP]int64

	runDone bool  // Run returned
	runErr  error // what it returned

	// drain is what DrainTimeout returns (0: 20s); drainCalls counts calls.
	drain      time.Duration
	drainCalls int

	// onRevoke, when set, is called (unlocked) at the end of every Revoke,
	// on the poll goroutine, inside librdkafka's rebalance callback.
	onRevoke func(tps []TP)
	// onLose, when set, is called (unlocked) at the end of every Lose,
	// on the poll goroutine, inside librdkafka's rebalance callback.
	onLose func(tps []TP)
}

func newFakeGroup() *fakeGroup {
	return &fakeGroup{
		changed:     make(chan struct{}),
		assigned:    map[TP]bool{},
		next:        map[TP]int64{},
		reported:    map[TP]int64{},
		recs:        map[TP][]sluice.Record{},
		sinceResume: map[TP]int{},
		pausing:     map[TP]bool{},
		pausedCh:    make(chan TP, 1024),
		wake:        make(chan struct{}, 1),
		highs:       map[TP]int64{},
	}
}

type commitCall struct {
	offs  []sluice.Offset
	took  time.Duration
	err   error
	polls int // Polled calls before this one
}

func (f *fakeGroup) Polled() {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.polls++
}

func (f *fakeGroup) Joined() {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.joins++
}

func (f *fakeGroup) Committed(offs []sluice.Offset, took time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.commits = append(f.commits, commitCall{offs, took, err, f.polls})
}

func (f *fakeGroup) HighWatermark(tp TP, high int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	if high < f.highs[tp] {
		f.violate("HighWatermark(%v) went back from %d to %d", tp, f.highs[tp], high)
	}
	f.highs[tp] = high
}

func (f *fakeGroup) MaxInFlight() int        { return pipeline.DefaultMaxInFlight }
func (f *fakeGroup) MaxInFlightBytes() int64 { return pipeline.DefaultMaxInFlightBytes }

func (f *fakeGroup) DrainTimeout() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainCalls++
	if f.drain == 0 {
		return 20 * time.Second
	}
	return f.drain
}

func (f *fakeGroup) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeGroup) violate(format string, args ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

func (f *fakeGroup) Assign(tps []TP) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.assigns = append(f.assigns, slices.Clone(tps))
	for _, tp := range tps {
		if f.assigned[tp] {
			continue
		}
		f.assigned[tp] = true
		delete(f.next, tp)
		delete(f.reported, tp)
		delete(f.pausing, tp)
		f.sinceResume[tp] = 0
	}
	return nil
}

func (f *fakeGroup) revokeLocked(tps []TP) []sluice.Offset {
	var out []sluice.Offset
	for _, tp := range tps {
		if !f.assigned[tp] {
			continue
		}
		if n, ok := f.next[tp]; ok {
			out = append(out, sluice.Offset{TopicPartition: tp, Next: n})
		}
		delete(f.assigned, tp)
		delete(f.pausing, tp)
	}
	return out
}

func (f *fakeGroup) Revoke(tps []TP) []sluice.Offset {
	f.mu.Lock()
	f.revokes = append(f.revokes, slices.Clone(tps))
	offs := f.revokeLocked(tps)
	hook := f.onRevoke
	f.bump()
	f.mu.Unlock()
	if hook != nil {
		hook(tps)
	}
	return offs
}

func (f *fakeGroup) Lose(tps []TP) {
	f.mu.Lock()
	f.loses = append(f.loses, slices.Clone(tps))
	for _, tp := range tps {
		delete(f.assigned, tp)
		delete(f.pausing, tp)
	}
	hook := f.onLose
	f.bump()
	f.mu.Unlock()
	if hook != nil {
		hook(tps)
	}
}

func (f *fakeGroup) Shutdown() []sluice.Offset {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.shutdowns++
	var all []TP
	for tp := range f.assigned {
		all = append(all, tp)
	}
	return f.revokeLocked(all)
}

func (f *fakeGroup) Unfinished() []sluice.TopicPartition { return nil }

func (f *fakeGroup) Deliver(tp TP, recs []sluice.Record) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	if !f.assigned[tp] {
		return false // the CheckingGroup reports it
	}
	if len(recs) == 0 {
		f.violate("Deliver(%v) of no records", tp)
	}
	for i, r := range recs {
		if n, ok := f.next[tp]; ok && r.Offset != n {
			f.violate("Deliver(%v) record %d: offset %d, want %d", tp, i, r.Offset, n)
		}
		f.next[tp] = r.Offset + 1
	}
	f.recs[tp] = append(f.recs[tp], recs...)
	f.total += len(recs)
	if f.pauseEvery <= 0 {
		return false
	}
	f.sinceResume[tp] += len(recs)
	if f.sinceResume[tp] < f.pauseEvery {
		return false
	}
	if !f.pausing[tp] {
		f.pausing[tp] = true
		f.pauses++
		f.pausedCh <- tp
	}
	return true
}

// release makes a paused partition resumable, as the runtime does when its
// queue drains. It may be called from any goroutine.
func (f *fakeGroup) release(tp TP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.pausing[tp] {
		return
	}
	f.resumable = append(f.resumable, tp)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeGroup) Resumable() []TP {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.resumable
	f.resumable = nil
	for _, tp := range out {
		delete(f.pausing, tp)
		f.sinceResume[tp] = 0
	}
	return out
}

func (f *fakeGroup) Wake() <-chan struct{} { return f.wake }

func (f *fakeGroup) Offsets() []sluice.Offset {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bump()
	f.offsetsCalls++
	var out []sluice.Offset
	for tp := range f.assigned {
		n, ok := f.next[tp]
		if ok && n > f.reported[tp] {
			f.reported[tp] = n
			out = append(out, sluice.Offset{TopicPartition: tp, Next: n})
		}
	}
	return out
}

// waitUntil waits until cond (called with f locked) holds, failing the
// test after timeout.
func (f *fakeGroup) waitUntil(t testing.TB, timeout time.Duration, what string, cond func(f *fakeGroup) bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond(f)
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		f.mu.Lock()
		done, err := f.runDone, f.runErr
		f.mu.Unlock()
		if done {
			t.Fatalf("Run returned %v while waiting for %s", err, what)
		}
		select {
		case <-ch:
		case <-deadline.C:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("timed out after %v waiting for %s (delivered %d, assigned %v)", timeout, what, f.total, keys(f.assigned))
		}
	}
}

// waitAll waits until cond holds, re-evaluating it whenever one of gs
// changes. cond locks what it reads (use with).
func waitAll(t testing.TB, timeout time.Duration, what string, cond func() bool, gs ...*fakeGroup) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline.C)}}
		for _, g := range gs {
			g.mu.Lock()
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.changed)})
			g.mu.Unlock()
		}
		if cond() {
			return
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func (f *fakeGroup) with(fn func(f *fakeGroup)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func keys(m map[TP]bool) []TP {
	var out []TP
	for tp, ok := range m {
		if ok {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, func(a, b TP) int { return int(a.Partition - b.Partition) })
	return out
}

// running is a source running in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	tolerate map[int]bool // contract clauses the test breaks on purpose
}

// tolerateClause keeps the cleanup from reporting breaches of a clause of
// the Source contract that the test provokes on purpose.
func (r *running) tolerateClause(clause int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tolerate[clause] = true
}

// start runs src with g wrapped in a sourcetest.CheckingGroup; the
// cleanup stops it and reports every breach of the Source contract.
func start(t testing.TB, src *Source, g *fakeGroup) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), tolerate: map[int]bool{}}
	cg := sourcetest.NewCheckingGroup(g)
	go func() {
		err := src.Run(ctx, cg)
		cg.Returned(ctx.Err() != nil)
		g.with(func(f *fakeGroup) { f.runDone, f.runErr = true, err; f.bump() })
		r.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, v := range cg.Violations() {
			if r.tolerate[v.Clause] {
				continue
			}
			t.Errorf("contract violation: %v", v)
		}
	})
	return r
}

// stop cancels the source and waits for Run to return.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after cancel")
		return nil
	}
}
