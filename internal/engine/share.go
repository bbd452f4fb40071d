package engine

import (
	"errors"
	"sync"

	"github.com/sluice-go/sluice"
)

// This file is share mode: per-record outcomes for a source that
// acknowledges records one by one (a Kafka share group, KIP-932) instead of
// committing offsets. A source turns it on with [Group.TrackAcks] before
// its first Assign; until then, and for every other source, nothing here
// runs (the tracker's share pointer is nil, one branch per completion).

// shareAcks collects the outcomes of every graph of a Run in share mode,
// until the source takes them (Acks). It outlives revoked graphs.
type shareAcks struct {
	rt   *Group
	mu   sync.Mutex
	acks []Ack
}

func (s *shareAcks) push(acks ...Ack) {
	s.mu.Lock()
	s.acks = append(s.acks, acks...)
	s.mu.Unlock()
	s.rt.signal()
}

// TrackAcks switches the Run to share mode; the source calls it from its
// poll goroutine before its first Assign (an error otherwise). From then
// on, every record's outcome is reported by [Group.Acks] as soon as it is
// known, in any order; retries exhausted on a record release it
// (sluice.AckReleased, logged as a warning) instead of stopping Run, and an
// invalid record without a dead-letter destination is rejected
// (sluice.AckRejected) instead of stopping Run. Records still unfinished when
// their partition is revoked, lost or shut down get no outcome: the source
// releases them itself. Offsets keeps working, but in share mode its
// values mean nothing (records arrive in any offset order).
func (rt *Group) TrackAcks() error {
	if len(rt.m.Owned()) > 0 {
		return errors.New("sluice: TrackAcks called after partitions were assigned; call it before the first Assign")
	}
	if rt.share == nil {
		rt.share = &shareAcks{rt: rt}
	}
	return nil
}

// Acks appends to dst the outcomes reported since the previous call, and
// returns it. Wake is signalled when there are new ones. Only for a Run
// in share mode (see [Group.TrackAcks]); otherwise it returns dst as it is.
// Poll goroutine only.
func (rt *Group) Acks(dst []Ack) []Ack {
	s := rt.share
	if s == nil {
		return dst
	}
	s.mu.Lock()
	dst = append(dst, s.acks...)
	clear(s.acks)
	s.acks = s.acks[:0]
	s.mu.Unlock()
	return dst
}

// DeadLetterRecord hands rec, a record of the assigned partition tp, to
// the dead-letter destination without running the graph, with reason as
// its error and [sluice.MaxDeliveriesStage] as its stage; once it is stored, its
// outcome is sluice.AckAccepted. Without a destination its outcome is
// sluice.AckRejected at once. The record counts in the in-flight budget until
// then (it is not refused when the budget is full). It returns false,
// doing nothing, when tp is not assigned or is being taken away. Share
// mode only (see [Group.TrackAcks]); poll goroutine only.
func (rt *Group) DeadLetterRecord(tp TopicPartition, rec Record, reason error) bool {
	g, ok := rt.m.Worker(tp)
	if !ok || rt.share == nil {
		return false
	}
	if rt.cfg.DeadLetter == nil {
		if g.isClosing() {
			return false
		}
		rt.share.push(Ack{TopicPartition: tp, Offset: rec.Offset, Outcome: sluice.AckRejected})
		return true
	}
	g.qmu.Lock()
	if g.closing {
		g.qmu.Unlock()
		return false
	}
	seq := g.tr.addUnfed(rec)
	g.pending.Add(1)
	g.qmu.Unlock()
	rt.inflight.Add(1)
	rt.bytes.Add(recordBytes(&rec))
	rt.hooks.RecordsDelivered(tp, 1)
	rt.reportInFlight()
	if !g.deadLetter(&Stage{name: sluice.MaxDeliveriesStage, g: g}, ticketAt(seq), sluice.Invalid(reason)) {
		g.tr.done(ticketAt(seq)) // the graph exited: give the slot back
		return false
	}
	return true
}

// shareFail is Stage.Fail in share mode for the errors that do not stop
// Run there: retries exhausted (the records behind t are released) and
// an invalid record without a dead-letter destination (rejected). It
// completes t and reports true for those; false for any other error.
func (s *Stage) shareFail(t Ticket, err error) bool {
	var ex *exhaustedError
	var fate AckOutcome
	switch {
	case sluice.IsInvalid(err) && s.g.rt.cfg.DeadLetter == nil:
		fate = sluice.AckRejected
	case errors.As(err, &ex):
		fate = sluice.AckReleased
	default:
		return false
	}
	offs, f := s.g.tr.settle(t, fate)
	s.misused(f)
	msg := "sluice: retries exhausted; share group records released for redelivery"
	if fate == sluice.AckRejected {
		msg = "sluice: invalid share group records rejected (no dead-letter destination)"
	}
	s.g.rt.cfg.Logger.Warn(msg,
		"stage", s.name, "topic", s.g.tp.Topic, "partition", s.g.tp.Partition, "offsets", offs, "err", err)
	return true
}

// settle sets the outcome of every record behind t that has none yet,
// completes t, and returns the records' offsets, and the partition's
// first fault if t had no reference left (see misuse.go).
func (tr *tracker) settle(t Ticket, fate AckOutcome) ([]int64, *ticketFault) {
	tr.mu.Lock()
	offs := tr.settleLocked(nil, t, fate)
	tr.mu.Unlock()
	return offs, tr.done(t)
}

func (tr *tracker) settleLocked(offs []int64, t Ticket, fate AckOutcome) []int64 {
	if t.joined() {
		if j := tr.joinOf(t); j != nil {
			for _, m := range j.members {
				offs = tr.settleLocked(offs, m, fate)
			}
		}
		return offs
	}
	if s := tr.slotOf(t); s != nil {
		if s.fate == 0 {
			s.fate = fate
		}
		offs = append(offs, s.rec.Offset)
	}
	return offs
}

// finishedLocked records the outcome of a slot whose last reference was
// just completed. Callers hold tr.mu; tr.share is set. A record claimed
// for the dead-letter destination finishes only once its dead letter was
// delivered, and is then ACCEPTed whatever another branch made of it:
// released, it would come back and be dead-lettered again.
func (tr *tracker) finishedLocked(s *slot) {
	fate := s.fate
	if fate == 0 || s.invalid {
		fate = sluice.AckAccepted
	}
	tr.acks = append(tr.acks, Ack{TopicPartition: tr.tp, Offset: s.rec.Offset, Outcome: fate})
}

// flushAcks hands the outcomes collected under the lock to the group.
// Callers do not hold tr.mu.
func (tr *tracker) flushAcks(acks []Ack) {
	if len(acks) > 0 {
		tr.share.push(acks...)
	}
}
