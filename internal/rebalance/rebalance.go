package rebalance

import (
	"errors"
	"slices"
	"time"

	"github.com/sluice-go/sluice"
)

// This file is what a rebalance does to the core, whatever the client
// and the protocol: a backend translates each rebalance callback of its
// client into one call of Assigned, Revoked or Lost, on the poll
// goroutine, and answers its client afterwards (librdkafka's *assign
// calls; kgo only waits for the callback to return).
//
// The partitions a callback names are authoritative under both
// protocols: an eager rebalance names the whole assignment (revoked
// first, then assigned anew), a cooperative one only the partitions that
// move. So the core needs no protocol: an assignment starts what it does
// not own yet, a revoke or a loss gives up what it owns of the set and
// ignores the rest.

// Assigned serves an assignment the client reported: it reports
// Group.Joined at the first one and owns the partitions of tps not owned
// yet (assign), logging them with attrs. An owned partition named again
// keeps its graph, its pause and what the core holds of it. Once closing
// it does nothing: the backend only answers its client. A backend whose
// Run already failed does not call it.
func (c *Core) Assigned(tps []sluice.TopicPartition, attrs ...any) {
	if c.closing {
		return
	}
	c.join()
	var fresh []sluice.TopicPartition
	for _, tp := range tps {
		if !c.owned[tp] {
			fresh = append(fresh, tp)
		}
	}
	if len(fresh) == 0 {
		return
	}
	c.log.Info("partitions assigned", append([]any{"partitions", fresh}, attrs...)...)
	c.assign(fresh)
}

// Revoked serves a revoke the client reported, while the client still
// owns tps in the group's eyes: it delivers the batch being built (those
// records were polled before the revoke), gives tps up (the partitions
// left paused go to Backend.GaveUpPaused), then drains the graphs of
// those it owned and commits what they finished, merged with their
// pending offsets, synchronously after the commit in flight and bounded
// by the commit timeout (drain, then commit). attrs are added to the log
// line. Once closing, tps drop out of the final commit; while Stop's
// final commit runs, the final offsets of every partition still owned
// are committed first (revokeWhileStopping). A backend that cannot tell
// a revoke from a loss of another topic under the same name while
// stopping calls Lost instead.
func (c *Core) Revoked(tps []sluice.TopicPartition, attrs ...any) {
	if c.closing {
		c.revokeWhileStopping(tps, attrs...)
		return
	}
	if mine, pending := c.leaving(tps); len(mine) > 0 {
		c.revoke(mine, pending, attrs...)
	}
}

// Lost serves a loss the client reported (the group moved tps on
// without this member): it delivers the batch being built, gives tps up
// (the partitions left paused go to Backend.GaveUpPaused) and cancels the
// graphs of those it owned without committing anything of theirs, after
// waiting for a commit in flight that holds one of them. Once closing it
// only drops tps out of the final commit.
func (c *Core) Lost(tps []sluice.TopicPartition) {
	if mine, _ := c.leaving(tps); len(mine) > 0 {
		c.lose(mine)
	}
}

// leaving is what a revoke and a loss of tps start with: once closing it
// only drops tps out of the final commit (and returns nothing); otherwise
// it delivers the batch being built and gives tps up (giveUp), returning
// those that were owned and their pending offsets.
func (c *Core) leaving(tps []sluice.TopicPartition) (mine []sluice.TopicPartition, pending []sluice.Offset) {
	if c.closing {
		c.drop(tps)
		return nil, nil
	}
	c.Flush()
	return c.giveUp(tps)
}

// revokeWhileStopping serves a revoke that comes while Stop's final
// commit runs (the client serves its rebalance then: before the first
// attempt and while a refused attempt waits to be retried). The revoked
// partitions are still this member's until the revoke is answered, and
// every graph is drained already, so the final offsets of every partition
// still owned, the revoked ones and those kept, are committed now in one
// commit, synchronously and by the final commit's deadline, as any revoke
// commits what its drain finished. The revoked partitions' next owner
// starts where this member stopped; once that commit succeeded the final
// commit has nothing left to send. Then the revoked partitions drop out of
// the final commit. A refused commit is logged like any revoke's, and the
// final commit goes on with the partitions kept. Outside the final commit
// (c.final is nil), or when nothing of the revoked partitions is final,
// the partitions are only dropped.
func (c *Core) revokeWhileStopping(tps []sluice.TopicPartition, attrs ...any) {
	var mine []sluice.TopicPartition
	for _, tp := range tps {
		if c.owned[tp] {
			mine = append(mine, tp)
		}
	}
	if len(filterTPs(c.final, mine)) == 0 {
		c.drop(tps)
		return
	}
	offs := filterTPs(c.final, c.OwnedList())
	c.drop(tps)
	c.log.Info("partitions revoked while stopping; committing the final offsets",
		append([]any{"partitions", mine, "offsets", offs}, attrs...)...)
	finished, err := c.commitSync(offs, "revoke", c.finalBy)
	if finished && err == nil {
		c.final = nil
		return
	}
	c.final = filterTPs(c.final, c.OwnedList())
	c.finalRevokeOutcome(filterTPs(offs, mine), finished, err)
}

// finalRevokeOutcome reports the revoke's commit of the final offsets
// (revokeWhileStopping) that did not succeed, for the revoked partitions
// offs, the way the final commit reports its own: a refusal because the
// group moved on is the FinalCommitRefused warning; a commit that did not
// finish or failed otherwise is kept for Stop to return (finalErr). The
// partitions kept are the final commit's retry's to report.
func (c *Core) finalRevokeOutcome(offs []sluice.Offset, finished bool, err error) {
	if finished && c.b.ExpectedCommitError(err) {
		c.log.Warn(FinalCommitRefused, "offsets", offs, "err", err)
		return
	}
	c.finalErr = errors.Join(c.finalErr, c.finalCommitError(offs, ", sent when they were revoked,", finished, err))
}

// join reports Group.Joined once, at the first assignment, unless the
// core is closing.
func (c *Core) join() {
	if !c.joined && !c.closing {
		c.joined = true
		c.g.Joined()
	}
}

// assign starts graphs for tps (Group.Assign) and owns them. A graph that
// fails to build is logged: Run has recorded the error and cancels ctx,
// so the source carries on and shuts down gracefully.
func (c *Core) assign(tps []sluice.TopicPartition) {
	if err := c.g.Assign(tps); err != nil {
		// Partitions without a graph drop their records and report no
		// offsets.
		c.log.Error("assign failed; waiting for the runtime to stop", "partitions", tps, "err", err)
	}
	for _, tp := range tps {
		if c.owned[tp] {
			continue // owned already: its pause and held records stay
		}
		c.assigns++
		c.ownership[tp] = c.assigns
		c.owned[tp] = true
		delete(c.paused, tp)
		delete(c.last, tp)
	}
}

// giveUp removes tps from the owned set and drops what the core held of
// them. It returns those that were owned (mine) and their pending
// offsets, and hands the partitions of tps the core had paused or failed
// to resume to Backend.GaveUpPaused (the backend decides whether the
// client keeps them paused).
func (c *Core) giveUp(tps []sluice.TopicPartition) (mine []sluice.TopicPartition, pending []sluice.Offset) {
	var stillPaused []sluice.TopicPartition
	for _, tp := range tps {
		if c.owned[tp] {
			mine = append(mine, tp)
		}
		delete(c.owned, tp)
		if c.paused[tp] || slices.Contains(c.unresumed, tp) {
			stillPaused = append(stillPaused, tp)
			delete(c.paused, tp)
		}
	}
	c.DropHeld(tps)
	if len(stillPaused) > 0 {
		c.b.GaveUpPaused(stillPaused)
	}
	return mine, c.takePending(mine)
}

// drop removes tps from the owned set while closing: they drop out of
// the final commit.
func (c *Core) drop(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		delete(c.owned, tp)
	}
	c.DropHeld(tps)
}

// revoke drains the graphs of mine (Group.Revoke; giveUp gave them up and
// returned pending) and commits what they finished, merged with pending,
// synchronously within the commit timeout, after the commit in flight.
// attrs are added to the log line.
func (c *Core) revoke(mine []sluice.TopicPartition, pending []sluice.Offset, attrs ...any) {
	c.log.Info("partitions revoked", append([]any{"partitions", mine}, attrs...)...)
	offs := c.g.Revoke(mine)
	c.commitSync(mergeOffsets(filterTPs(offs, mine), pending), "revoke", time.Now().Add(c.commitTimeout()))
}

// lose cancels the graphs of mine (Group.Lose; giveUp gave them up) and
// waits, bounded by the commit timeout, for a commit in flight that holds
// one of them, so that it cannot land after the next owner's commits.
func (c *Core) lose(mine []sluice.TopicPartition) {
	c.log.Warn("partitions lost", "partitions", mine)
	c.g.Lose(mine)
	c.awaitLost(mine)
}

// LoseAll gives every owned partition up without committing (after a
// fatal error) and starts closing.
func (c *Core) LoseAll() {
	clear(c.batch)
	c.batch, c.batchBytes = c.batch[:0], 0
	c.dropAllHeld()
	tps := c.OwnedList()
	clear(c.owned)
	clear(c.paused)
	clear(c.pending)
	if len(tps) > 0 {
		c.g.Lose(tps)
	}
	c.closing = true
}
