package engine

import (
	"sync"
	"sync/atomic"
)

// This file lets a stage complete values in groups without making anyone
// wait for a group. Completing a value (Stage.Done) takes the partition's
// tracker lock, advances its committable offset, tells the completion
// hooks and gives the value's share of the in-flight budget back to
// counters every partition shares: for a stage whose function takes
// nanoseconds (Each writing to memory) that costs more than the call.
//
// DoneLater keeps a stage's completions in a list of its own instead, and
// FlushDone hands the list to the tracker in one Done. The stage flushes
// its list itself, often: Each, the only user, every few values, at the
// end of each chunk, before a failure and before it returns. What it
// cannot do is flush while its goroutine is inside a call, so the runtime
// flushes every stage's list itself whenever it needs the values whose
// call returned completed:
//
//   - Offsets (the source's periodic commit): a commit covers every value
//     whose call returned, as if each had completed at once; the first
//     value kept into an empty list signals Wake, for a source that
//     commits when woken (testkit's fake);
//   - an admission that finds no room (Deliver, Saturated) and a source
//     asking which paused partitions may resume (Resumable, on Wake,
//     which the first value kept into an empty list signals): the budget
//     held by values whose call returned goes back before a partition is
//     paused, stays paused or a source stops taking records, so a slow
//     call never holds other partitions back with its stage's finished
//     values, and a call that waits for another partition's progress
//     gets it;
//   - the partition's feeder before it waits for room (pace.go) and its
//     dead-letter goroutine before it waits for the records before a
//     dead letter to finish: a value kept while either waits signals it
//     to look again;
//   - an abandoned partition (abandon.go): its committed offset and the
//     error name the first record whose call did not return;
//   - every poll of the source (Polled), for the lists that outlived the
//     poll before: so the completion hooks, and what waits for them, see
//     a kept value within about two polls.
//
// A share group's stages keep nothing: a share group acknowledges each
// record as it completes, and a kept record's acquisition lock could run
// out while the stage's next call runs. So what keeping changes is only
// when the hooks count a finished value while its stage's next call runs:
// at most about two polls later.
type laterDone struct {
	// mu is held while the list is completed (FlushDone), so that a
	// flush that finds the list empty knows its values completed.
	mu sync.Mutex
	ts []Ticket
}

// DoneLater completes t like Done, but later: it is kept with the stage's
// completions not handed to the tracker yet, for the next FlushDone (the
// stage's own, or one made for it by the runtime, see above). Call it only
// from the stage's own goroutine, for a value it has finished.
func (s *Stage) DoneLater(t Ticket) {
	if s.g.tr.share != nil {
		// A share group acknowledges what completed: a kept record's
		// acquisition lock could run out while the stage's next call runs.
		s.Done(t)
		return
	}
	l := &s.later
	l.mu.Lock()
	first := len(l.ts) == 0
	if first {
		s.g.rt.later.add(s)
	}
	l.ts = append(l.ts, t)
	l.mu.Unlock()
	if first {
		// A source that commits or resumes when woken asks for Offsets
		// or Resumable, which flush.
		s.g.rt.signal()
	}
	// The partition's feeder and dead-letter goroutine flush before they
	// wait for completions; one that waits already looks again.
	s.g.wakeWaitingFeeder()
	s.g.tr.signalSettled()
}

// FlushDone completes the stage's tickets kept by DoneLater. Any goroutine
// may call it; each kept ticket is completed once, by the first flush
// that finds it, and a flush returns only once every ticket kept before
// it was called completed (another flush's included).
func (s *Stage) FlushDone() {
	l := &s.later
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ts) == 0 {
		return
	}
	s.g.rt.later.remove(s)
	// The list is emptied before Done, whose hooks may panic: a panic
	// must leave no ticket to complete twice.
	ts := l.ts
	l.ts = nil
	s.Done(ts...)
	l.ts = ts[:0]
}

// flushDone completes what the stages of g kept with DoneLater.
func (g *graph) flushDone() {
	for _, s := range g.stages {
		s.FlushDone()
	}
}

// laterStages is the set of one Run's stages whose DoneLater list is not
// empty, for the runtime to flush when it needs their values completed.
// Each stage is stored with the poll round in which its list began
// (see stale).
type laterStages struct {
	mu     sync.Mutex
	stages map[*Stage]uint64
	round  uint64       // polls seen (stale)
	n      atomic.Int32 // len(stages)
}

func (ls *laterStages) add(s *Stage) {
	ls.mu.Lock()
	if ls.stages == nil {
		ls.stages = make(map[*Stage]uint64)
	}
	ls.stages[s] = ls.round
	ls.n.Store(int32(len(ls.stages)))
	ls.mu.Unlock()
}

func (ls *laterStages) remove(s *Stage) {
	ls.mu.Lock()
	delete(ls.stages, s)
	ls.n.Store(int32(len(ls.stages)))
	ls.mu.Unlock()
}

// flush completes what every stage kept with DoneLater. It takes no lock
// when no stage keeps anything, and must not be called with rt.mu held
// (completions return budget under it).
func (ls *laterStages) flush() {
	if ls.n.Load() == 0 {
		return
	}
	ls.mu.Lock()
	stages := make([]*Stage, 0, len(ls.stages))
	for s := range ls.stages {
		stages = append(stages, s)
	}
	ls.mu.Unlock()
	for _, s := range stages {
		s.FlushDone()
	}
}

// stale is called once per poll of the source (Group.Polled): it
// completes the lists that began before the previous poll. A stage
// flushes its own list within microseconds while its calls are fast, so
// a list that outlived a whole poll waits behind a call that blocks; no
// value whose call returned waits longer than about two polls (100 ms
// each at most for the Kafka sources) for the completion hooks, whatever
// else flushes.
func (ls *laterStages) stale() {
	if ls.n.Load() == 0 {
		return
	}
	ls.mu.Lock()
	var stages []*Stage
	for s, round := range ls.stages {
		if round < ls.round {
			stages = append(stages, s)
		}
	}
	ls.round++
	ls.mu.Unlock()
	for _, s := range stages {
		s.FlushDone()
	}
}
