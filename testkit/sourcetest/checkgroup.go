package sourcetest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/saturation"
)

// CheckingGroup is a sluice.Group that forwards every call to the Group
// that pipeline.Run handed a source and checks, on the way, that the source
// keeps the Source contract (see the Clause constants): calls never
// overlap and none comes after Source.Run returned (§1); records are
// delivered only for assigned partitions, as their own, in offset order
// (§2); a partition whose Deliver asked for a pause gets nothing more, once
// the source reported its next poll (Group.Polled), until Resumable lists
// it: records of the poll that filled it are allowed, as the contract
// says (§3); every committed offset is one the group returned, and
// commits do not move back (§4); what Revoke returned is committed before
// the source makes its next call, nothing is committed for a partition
// after that or after Lose (§5); and Shutdown is called once ctx is done,
// nothing is assigned or delivered after it, and what it returned is
// committed before Source.Run returns (§6). A commit reported while the
// source handles a loss (before its next call) is taken as one sent
// before the loss.
//
// Commits are checked as the source reports them with Group.Committed, so
// a source that commits without reporting is not seen; the scenarios of
// [Run] check the group's commits in the Driver too. Calls from a
// goroutine other than the poll loop are only seen when they overlap
// another call.
//
// Use [Check] to wrap a source; NewCheckingGroup is for sources that are
// driven by hand. Violations may be read at any time, from any goroutine.
type CheckingGroup struct {
	g    sluice.Group
	busy atomic.Bool

	mu         sync.Mutex
	violations []Violation
	parts      map[sluice.TopicPartition]*partState
	returned   bool // Source.Run returned
	shutdown   bool // Shutdown was called
	// window: the partitions the last Revoke, Lose or Shutdown gave up,
	// which may still be reported committed, and the final offsets still
	// to be (none for Lose). A Revoke's or Lose's window closes at the
	// source's next call (it went on), Shutdown's when Run returns.
	window     map[sluice.TopicPartition]int64
	windowOpen bool
	windowFrom string // "Revoke", "Lose" or "Shutdown"
	counts     Counts
	// share: the group checks a share source (CheckingAckGroup): records
	// come in any offset order and the Assign clause is §8.
	share bool
}

// partState is what the checker knows of one partition.
type partState struct {
	assigned     bool
	lost         bool
	revoked      bool
	last         int64 // offset last delivered in this assignment, -1 before
	paused       bool  // Deliver asked for a pause; Resumable has not listed it
	pollAfter    bool  // a Polled came after the pause
	returned     map[int64]bool
	committed    int64 // last value reported committed without error, -1 before
	inWindow     bool  // revoked or shut down by the open window's call
	deliveredNow int   // records delivered in the current assignment
}

// Counts says what a [CheckingGroup] saw, for scenarios that wait for an
// event (a pause, a loss) and check it happened.
type Counts struct {
	Assigned, Revoked, Lost int // partitions, summed over calls
	Pauses, Resumes         int // Deliver calls that asked for a pause; partitions Resumable listed
	Delivered               int // records
	Commits, CommitErrors   int // Committed reports, and those with an error
}

// NewCheckingGroup returns a CheckingGroup forwarding to g. Pass it to the
// source's Run in place of g, and call Returned once that Run returned.
func NewCheckingGroup(g sluice.Group) *CheckingGroup {
	return &CheckingGroup{g: g, parts: map[sluice.TopicPartition]*partState{}}
}

// Violations returns the breaches seen so far, in the order they happened.
func (c *CheckingGroup) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// Counts returns what the group saw so far.
func (c *CheckingGroup) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// Owned returns the partitions assigned now, sorted by topic and partition.
func (c *CheckingGroup) Owned() []sluice.TopicPartition {
	return c.where(func(st *partState) bool { return st.assigned })
}

// Paused returns the assigned partitions whose Deliver asked for a pause
// and that Resumable has not listed since, sorted.
func (c *CheckingGroup) Paused() []sluice.TopicPartition {
	return c.where(func(st *partState) bool { return st.assigned && st.paused })
}

func (c *CheckingGroup) where(keep func(*partState) bool) []sluice.TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[sluice.TopicPartition]int64{}
	for tp, st := range c.parts {
		if keep(st) {
			m[tp] = 0
		}
	}
	return sortedTPs(m)
}

// Returned tells the checker that Source.Run returned; ctxDone says
// whether its ctx was done by then. It checks the shutdown clause (§6);
// any call after it breaks §1. What Run returned is not judged: an error
// naming a failed shutdown step is allowed, and the scenarios of [Run]
// check it is nil where nothing fails.
func (c *CheckingGroup) Returned(ctxDone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.returned = true
	if !ctxDone {
		return // a fatal client failure: nothing to commit
	}
	if !c.shutdown {
		c.violate(ClauseShutdown, "Source.Run returned after ctx was done without calling Group.Shutdown")
	}
	if c.windowOpen && c.windowFrom == "Shutdown" {
		c.closeWindow(ClauseShutdown)
	}
}

func (c *CheckingGroup) violate(clause int, format string, args ...any) {
	c.violations = append(c.violations, Violation{Clause: clause, Detail: fmt.Sprintf(format, args...)})
}

func (c *CheckingGroup) part(tp sluice.TopicPartition) *partState {
	st := c.parts[tp]
	if st == nil {
		st = &partState{last: -1, committed: -1, returned: map[int64]bool{}}
		c.parts[tp] = st
	}
	return st
}

// enter checks §1 for a call of method and, when closes is set, closes a
// Revoke's commit window (the source went on). It returns with c.mu held.
func (c *CheckingGroup) enter(method string, closes bool) {
	overlap := !c.busy.CompareAndSwap(false, true)
	c.mu.Lock()
	if overlap {
		c.violate(ClauseCalls, "Group.%s called while another Group call was running", method)
	}
	if c.returned {
		c.violate(ClauseCalls, "Group.%s called after Source.Run returned", method)
	}
	if closes && c.windowOpen && c.windowFrom != "Shutdown" {
		c.closeWindow(ClauseGiveUp)
	}
}

// exit ends a call begun by enter (c.mu not held).
func (c *CheckingGroup) exit() { c.busy.Store(false) }

// calling makes call, the wrapped group's method, as the Group call named
// method: enter checks the call (closes as for enter), call runs without
// c.mu held, and calling returns with c.mu held. The caller defers the
// func it returns, which releases c.mu and ends the call (exit); a call
// that panics ends the call as well.
func (c *CheckingGroup) calling(method string, closes bool, call func()) (done func()) {
	c.enter(method, closes)
	c.mu.Unlock()
	returned := false
	defer func() {
		if !returned {
			c.exit()
		}
	}()
	call()
	returned = true
	c.mu.Lock()
	return func() {
		c.mu.Unlock()
		c.exit()
	}
}

// closeWindow reports the final offsets not committed in the window.
func (c *CheckingGroup) closeWindow(clause int) {
	until := "the source's next Group call"
	if c.windowFrom == "Shutdown" {
		until = "Source.Run returned"
	}
	for _, tp := range sortedTPs(c.window) {
		c.violate(clause, "%s/%d: the final offset %d that Group.%s returned was not reported committed (Group.Committed) before %s",
			tp.Topic, tp.Partition, c.window[tp], c.windowFrom, until)
	}
	for _, st := range c.parts {
		st.inWindow = false
	}
	c.window, c.windowOpen = nil, false
}

func (c *CheckingGroup) openWindow(from string, tps []sluice.TopicPartition, offs []sluice.Offset) {
	if !c.windowOpen { // else Shutdown's, open until Run returns: add to it
		c.window, c.windowOpen, c.windowFrom = map[sluice.TopicPartition]int64{}, true, from
	}
	for _, tp := range tps {
		c.part(tp).inWindow = true
	}
	for _, o := range offs {
		c.window[o.TopicPartition] = o.Next
	}
}

func (c *CheckingGroup) noteReturned(offs []sluice.Offset) {
	for _, o := range offs {
		c.part(o.TopicPartition).returned[o.Next] = true
	}
}

// Assign implements sluice.Group.
func (c *CheckingGroup) Assign(tps []sluice.TopicPartition) error {
	c.enter("Assign", true)
	if c.shutdown {
		c.violate(ClauseShutdown, "Group.Assign(%v) called after Group.Shutdown", tps)
	}
	c.mu.Unlock()
	defer c.exit()
	err := c.g.Assign(tps)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		st := c.part(tp)
		if st.assigned {
			continue // ignored by the group
		}
		*st = partState{assigned: true, last: -1, committed: st.committed, returned: st.returned}
		c.counts.Assigned++
	}
	return err
}

// Revoke implements sluice.Group.
func (c *CheckingGroup) Revoke(tps []sluice.TopicPartition) []sluice.Offset {
	var offs []sluice.Offset
	defer c.calling("Revoke", true, func() { offs = c.g.Revoke(tps) })()
	mine := c.release(tps, func(st *partState) { st.revoked = true; c.counts.Revoked++ })
	c.noteReturned(offs)
	c.openWindow("Revoke", mine, offs)
	return offs
}

// release marks the partitions of tps the group had assigned as no longer
// assigned, calls how for each, and returns them.
func (c *CheckingGroup) release(tps []sluice.TopicPartition, how func(*partState)) []sluice.TopicPartition {
	var mine []sluice.TopicPartition
	for _, tp := range tps {
		if st := c.parts[tp]; st != nil && st.assigned {
			st.assigned = false
			how(st)
			mine = append(mine, tp)
		}
	}
	return mine
}

// Lose implements sluice.Group.
func (c *CheckingGroup) Lose(tps []sluice.TopicPartition) {
	defer c.calling("Lose", true, func() { c.g.Lose(tps) })()
	mine := c.release(tps, func(st *partState) { st.lost = true; c.counts.Lost++ })
	// A commit sent before the loss may still be answered while the
	// source handles it: reports until its next call are taken as those.
	c.openWindow("Lose", mine, nil)
}

// Shutdown implements sluice.Group.
func (c *CheckingGroup) Shutdown() []sluice.Offset {
	var offs []sluice.Offset
	defer c.calling("Shutdown", true, func() { offs = c.g.Shutdown() })()
	c.shutdown = true
	var mine []sluice.TopicPartition
	for tp, st := range c.parts {
		if st.assigned {
			st.assigned = false
			mine = append(mine, tp)
		}
	}
	c.noteReturned(offs)
	c.openWindow("Shutdown", mine, offs)
	return offs
}

// Unfinished passes the wrapped Group's report through.
func (c *CheckingGroup) Unfinished() []sluice.TopicPartition { return c.g.Unfinished() }

// DrainTimeout implements sluice.Group.
func (c *CheckingGroup) DrainTimeout() time.Duration {
	c.enter("DrainTimeout", false)
	c.mu.Unlock()
	defer c.exit()
	return c.g.DrainTimeout()
}

// MaxInFlight implements sluice.Group: the wrapped Group's. It may be
// called from any goroutine, so it is not checked.
func (c *CheckingGroup) MaxInFlight() int { return c.g.MaxInFlight() }

// MaxInFlightBytes implements sluice.Group: the wrapped Group's. It may
// be called from any goroutine, so it is not checked.
func (c *CheckingGroup) MaxInFlightBytes() int64 { return c.g.MaxInFlightBytes() }

// Saturated reports whether the wrapped Group says the runtime's in-flight
// budget is full, false when it does not tell: the runtime's Group
// answers a source that asks (the franz-go source takes nothing from its
// client while it is), and a checked source must see what it sees
// unchecked. It is no call of the Source contract, takes no lock and may
// be called from any goroutine, so it is not checked.
func (c *CheckingGroup) Saturated() bool { return saturation.Of(c.g) }

// Deliver implements sluice.Group.
func (c *CheckingGroup) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	c.enter("Deliver", true)
	st := c.part(tp)
	switch {
	case c.shutdown:
		c.violate(ClauseShutdown, "Group.Deliver of %d records of %s/%d called after Group.Shutdown", len(recs), tp.Topic, tp.Partition)
	case !st.assigned:
		why := "never assigned"
		if st.lost {
			why = "lost (Group.Lose)"
		} else if st.revoked {
			why = "revoked (Group.Revoke)"
		}
		c.violate(c.assignClause(), "Group.Deliver of %d records of %s/%d, which is %s", len(recs), tp.Topic, tp.Partition, why)
	case st.paused && st.pollAfter && len(recs) > 0:
		c.violate(ClausePause, "%s/%d: %d records from offset %d delivered after Deliver asked for a pause and a later poll, before Group.Resumable listed the partition",
			tp.Topic, tp.Partition, len(recs), recs[0].Offset)
	}
	for _, r := range recs {
		if r.Topic != tp.Topic || r.Partition != tp.Partition {
			c.violate(c.assignClause(), "record %s/%d@%d delivered as a record of %s/%d", r.Topic, r.Partition, r.Offset, tp.Topic, tp.Partition)
		}
		if !c.share && st.assigned && r.Offset <= st.last {
			c.violate(ClauseDeliver, "%s/%d: offset %d delivered after offset %d (in this assignment); offsets must increase",
				tp.Topic, tp.Partition, r.Offset, st.last)
		}
		st.last = max(st.last, r.Offset)
	}
	st.deliveredNow += len(recs)
	c.counts.Delivered += len(recs)
	c.mu.Unlock()
	defer c.exit()
	pause := c.g.Deliver(tp, recs)
	if pause {
		c.mu.Lock()
		if !st.paused {
			st.paused, st.pollAfter = true, false
		}
		c.counts.Pauses++
		c.mu.Unlock()
	}
	return pause
}

// assignClause is the clause a delivery of a partition not assigned
// breaks: §2, or §8 for a share source.
func (c *CheckingGroup) assignClause() int {
	if c.share {
		return ClauseShareAssign
	}
	return ClauseDeliver
}

// Resumable implements sluice.Group.
func (c *CheckingGroup) Resumable() []sluice.TopicPartition {
	var tps []sluice.TopicPartition
	defer c.calling("Resumable", true, func() { tps = c.g.Resumable() })()
	for _, tp := range tps {
		c.part(tp).paused = false
		c.counts.Resumes++
	}
	return tps
}

// Wake implements sluice.Group.
func (c *CheckingGroup) Wake() <-chan struct{} {
	c.enter("Wake", false)
	c.mu.Unlock()
	defer c.exit()
	return c.g.Wake()
}

// Offsets implements sluice.Group.
func (c *CheckingGroup) Offsets() []sluice.Offset {
	var offs []sluice.Offset
	defer c.calling("Offsets", true, func() { offs = c.g.Offsets() })()
	c.noteReturned(offs)
	return offs
}

// Polled implements sluice.Group.
func (c *CheckingGroup) Polled() {
	c.enter("Polled", true)
	for _, st := range c.parts {
		if st.paused {
			st.pollAfter = true
		}
	}
	c.mu.Unlock()
	defer c.exit()
	c.g.Polled()
}

// Joined implements sluice.Group.
func (c *CheckingGroup) Joined() {
	c.enter("Joined", false)
	c.mu.Unlock()
	defer c.exit()
	c.g.Joined()
}

// Committed implements sluice.Group.
func (c *CheckingGroup) Committed(offs []sluice.Offset, took time.Duration, err error) {
	c.enter("Committed", false)
	c.counts.Commits++
	if err != nil {
		c.counts.CommitErrors++
	}
	for _, o := range offs {
		tp, st := o.TopicPartition, c.part(o.TopicPartition)
		switch {
		case !st.returned[o.Next]:
			c.violate(ClauseCommit, "%s/%d: committed %d, a value the group never returned (from Offsets, Revoke or Shutdown)",
				tp.Topic, tp.Partition, o.Next)
		case st.lost && !st.assigned && !st.inWindow:
			c.violate(ClauseGiveUp, "%s/%d: committed %d after Group.Lose gave the partition up", tp.Topic, tp.Partition, o.Next)
		case !st.assigned && !st.inWindow:
			c.violate(ClauseGiveUp, "%s/%d: committed %d after the partition was revoked, later than the synchronous commit of what Group.Revoke returned",
				tp.Topic, tp.Partition, o.Next)
		}
		if err == nil && o.Next < st.committed {
			c.violate(ClauseCommit, "%s/%d: committed %d after %d; commits moved back", tp.Topic, tp.Partition, o.Next, st.committed)
		}
		if err == nil {
			st.committed = max(st.committed, o.Next)
		}
		if due, ok := c.window[tp]; ok && o.Next >= due {
			delete(c.window, tp)
		}
	}
	c.mu.Unlock()
	defer c.exit()
	c.g.Committed(offs, took, err)
}

// HighWatermark implements sluice.Group.
func (c *CheckingGroup) HighWatermark(tp sluice.TopicPartition, high int64) {
	c.enter("HighWatermark", false)
	c.mu.Unlock()
	defer c.exit()
	c.g.HighWatermark(tp, high)
}

func sortedTPs(m map[sluice.TopicPartition]int64) []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b sluice.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

var _ sluice.Group = (*CheckingGroup)(nil)
