package sourcetest

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluice-go/sluice"
)

// CheckingAckGroup is a sluice.AckGroup that forwards every call to the
// AckGroup that pipeline.Run handed a share source and checks, on the
// way, that the source keeps the share contract (§7 to §12) and the
// clauses of the Source contract it keeps (§1 its calls, §3 its pauses,
// §6 its shutdown, as [CheckingGroup] checks them): TrackAcks is called
// once, before any Assign (§7); records are delivered (or handed to
// DeadLetterRecord) only for assigned partitions, as their own, in any
// offset order (§8); every outcome the group reported was taken with
// Acks by the time Source.Run returned after ctx was done, and no record
// whose accepted or rejected outcome the source took comes back (the
// broker had not heard of it) (§9); and nothing is committed (§10).
//
// §11 and §12 are kept between the source and its broker, which this
// group does not see: the scenarios of [RunShare] check them through the
// [ShareDriver] (a released record comes back, a record delivered too
// often reaches the dead-letter destination). The group tells them which
// records the source had to release: [CheckingAckGroup.Held].
//
// Use [CheckShare] to wrap a source; NewCheckingAckGroup is for sources
// that are driven by hand. Violations may be read at any time, from any
// goroutine.
type CheckingAckGroup struct {
	*CheckingGroup
	ag sluice.AckGroup

	// under CheckingGroup.mu
	tracked     bool
	records     map[RecordAt]*recordState
	shareCounts ShareCounts
}

// RecordAt names one record: its partition and offset.
type RecordAt struct {
	sluice.TopicPartition
	Offset int64
}

// recordState is what the checker knows of one record.
type recordState struct {
	deliveries int                 // by Deliver or DeadLetterRecord
	held       bool                // delivered, its outcome not taken yet
	outcomes   []sluice.AckOutcome // taken with Acks, in order
	final      bool                // an outcome other than released was taken
}

// ShareCounts says what a [CheckingAckGroup] saw of the records.
type ShareCounts struct {
	Delivered    int // records handed with Deliver to an assigned partition
	DeadLettered int // records DeadLetterRecord took
	// Outcomes the source took with Acks.
	Accepted, Rejected, Released int
	// Untaken is how many outcomes the group still had when Source.Run
	// returned after ctx was done (each a §9 violation).
	Untaken int
}

// NewCheckingAckGroup returns a CheckingAckGroup forwarding to g. Pass it
// to the source's Run in place of g, and call Returned once that Run
// returned.
func NewCheckingAckGroup(g sluice.AckGroup) *CheckingAckGroup {
	cg := NewCheckingGroup(g)
	cg.share = true
	return &CheckingAckGroup{CheckingGroup: cg, ag: g, records: map[RecordAt]*recordState{}}
}

// ShareCounts returns what the group saw of the records so far.
func (c *CheckingAckGroup) ShareCounts() ShareCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shareCounts
}

// Outcomes returns the outcomes of the record at off of tp that the
// source took with Acks, in the order it took them, and how many times
// it was delivered (Deliver and DeadLetterRecord).
func (c *CheckingAckGroup) Outcomes(tp sluice.TopicPartition, off int64) (outcomes []sluice.AckOutcome, deliveries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.records[RecordAt{tp, off}]; st != nil {
		return slices.Clone(st.outcomes), st.deliveries
	}
	return nil, 0
}

// Held returns the records delivered whose outcome the source has not
// taken, sorted: once Source.Run returned, those that were unfinished when
// their partition was given up, which the source had to release (§11).
func (c *CheckingAckGroup) Held() []RecordAt {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []RecordAt
	for r, st := range c.records {
		if st.held {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b RecordAt) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// Returned tells the checker that Source.Run returned; ctxDone says
// whether its ctx was done by then. Besides what [CheckingGroup.Returned]
// checks, it takes from the group the outcomes the source left (§9).
func (c *CheckingAckGroup) Returned(ctxDone bool) {
	c.CheckingGroup.Returned(ctxDone)
	if !ctxDone {
		return // a fatal client failure: the records are lost, not acknowledged
	}
	left := c.ag.Acks(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(left) > 0 {
		a := left[0]
		c.violate(ClauseAcknowledge, "%d outcomes reported by the group were never taken with Acks before Source.Run returned (%s/%d@%d %s among them)",
			len(left), a.Topic, a.Partition, a.Offset, a.Outcome)
		c.shareCounts.Untaken += len(left)
	}
}

// record notes a delivery of r.
func (c *CheckingAckGroup) record(r RecordAt) {
	st := c.records[r]
	if st == nil {
		st = &recordState{}
		c.records[r] = st
	}
	if st.final && !st.held {
		c.violate(ClauseAcknowledge, "%s/%d@%d delivered again after the source took its outcome %s (Acks): the broker never heard of it",
			r.Topic, r.Partition, r.Offset, st.outcomes[len(st.outcomes)-1])
	}
	st.deliveries++
	st.held = true
}

// TrackAcks implements sluice.AckGroup.
func (c *CheckingAckGroup) TrackAcks() error {
	c.enter("TrackAcks", true)
	switch {
	case c.tracked:
		c.violate(ClauseTrackAcks, "Group.TrackAcks called a second time")
	case c.counts.Assigned > 0:
		c.violate(ClauseTrackAcks, "Group.TrackAcks called after partitions were assigned")
	}
	c.tracked = true
	c.mu.Unlock()
	defer c.exit()
	return c.ag.TrackAcks()
}

// Assign implements sluice.Group.
func (c *CheckingAckGroup) Assign(tps []sluice.TopicPartition) error {
	c.mu.Lock()
	if !c.tracked {
		c.violate(ClauseTrackAcks, "Group.Assign(%v) called before Group.TrackAcks", tps)
	}
	c.mu.Unlock()
	return c.CheckingGroup.Assign(tps)
}

// Deliver implements sluice.Group.
func (c *CheckingAckGroup) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	pause := c.CheckingGroup.Deliver(tp, recs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.parts[tp]; st != nil && st.assigned && !c.shutdown {
		for _, r := range recs {
			c.record(RecordAt{tp, r.Offset})
		}
		c.shareCounts.Delivered += len(recs)
	}
	return pause
}

// DeadLetterRecord implements sluice.AckGroup.
func (c *CheckingAckGroup) DeadLetterRecord(tp sluice.TopicPartition, rec sluice.Record, reason error) bool {
	c.enter("DeadLetterRecord", true)
	st := c.part(tp)
	switch {
	case c.shutdown:
		c.violate(ClauseShutdown, "Group.DeadLetterRecord of %s/%d@%d called after Group.Shutdown", tp.Topic, tp.Partition, rec.Offset)
	case !st.assigned:
		c.violate(ClauseShareAssign, "Group.DeadLetterRecord of %s/%d@%d, a partition not assigned", tp.Topic, tp.Partition, rec.Offset)
	}
	if rec.Topic != tp.Topic || rec.Partition != tp.Partition {
		c.violate(ClauseShareAssign, "record %s/%d@%d dead-lettered as a record of %s/%d", rec.Topic, rec.Partition, rec.Offset, tp.Topic, tp.Partition)
	}
	c.mu.Unlock()
	defer c.exit()
	ok := c.ag.DeadLetterRecord(tp, rec, reason)
	if ok {
		c.mu.Lock()
		c.record(RecordAt{tp, rec.Offset})
		c.shareCounts.DeadLettered++
		c.mu.Unlock()
	}
	return ok
}

// Acks implements sluice.AckGroup.
func (c *CheckingAckGroup) Acks(dst []sluice.Ack) []sluice.Ack {
	n := len(dst)
	defer c.calling("Acks", true, func() { dst = c.ag.Acks(dst) })()
	for _, a := range dst[n:] {
		r := RecordAt{a.TopicPartition, a.Offset}
		st := c.records[r]
		if st == nil {
			st = &recordState{}
			c.records[r] = st
		}
		st.held = false
		st.outcomes = append(st.outcomes, a.Outcome)
		switch a.Outcome {
		case sluice.AckAccepted:
			c.shareCounts.Accepted++
			st.final = true
		case sluice.AckRejected:
			c.shareCounts.Rejected++
			st.final = true
		case sluice.AckReleased:
			c.shareCounts.Released++
		}
	}
	return dst
}

// Committed implements sluice.Group: a share source commits nothing
// (§10).
func (c *CheckingAckGroup) Committed(offs []sluice.Offset, took time.Duration, err error) {
	c.enter("Committed", false)
	c.counts.Commits++
	if err != nil {
		c.counts.CommitErrors++
	}
	if len(offs) > 0 {
		c.violate(ClauseNoCommit, "committed %v (reported with Group.Committed)", offs)
	}
	c.mu.Unlock()
	defer c.exit()
	c.ag.Committed(offs, took, err)
}

// Revoke implements sluice.Group: what it returns is not to be
// committed, so no commit is awaited.
func (c *CheckingAckGroup) Revoke(tps []sluice.TopicPartition) []sluice.Offset {
	var offs []sluice.Offset
	defer c.calling("Revoke", true, func() { offs = c.ag.Revoke(tps) })()
	c.release(tps, func(st *partState) { st.revoked = true; c.counts.Revoked++ })
	return offs
}

// Shutdown implements sluice.Group: what it returns is not to be
// committed, so no commit is awaited.
func (c *CheckingAckGroup) Shutdown() []sluice.Offset {
	var offs []sluice.Offset
	defer c.calling("Shutdown", true, func() { offs = c.ag.Shutdown() })()
	c.shutdown = true
	for _, st := range c.parts {
		st.assigned = false
	}
	return offs
}

var _ sluice.AckGroup = (*CheckingAckGroup)(nil)
