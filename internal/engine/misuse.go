package engine

import (
	"errors"
	"fmt"
)

// This file is the check of the ticket contract: every reference to a
// ticket is completed once, and a value is passed on only with a ticket
// it holds a reference to. A stage that completes a value and still
// passes it on, or completes it twice, would otherwise let its records
// commit while the value is still in the graph. The tracker refuses what
// has no reference left (it never frees a slot or a join twice), records
// the partition's first such fault, and from then on commits and
// acknowledges nothing more; the stage that hit it stops Run and the
// partition's graph.

// ErrTicketCompleted is wrapped by the *StageError that stops [Run] when a
// stage used a ticket that had no reference left: it completed a value
// (Done, Drop, Fail) and still passed it on, completed one value twice, or
// retained, joined or split a ticket already completed. The error names
// the stage that used it, the partition, and the record's offset when
// the record is still held (-1 otherwise). From that moment on nothing
// more of the partition is committed (or, in share mode, acknowledged);
// records that completed before it, through the misused ticket, may have
// been.
var ErrTicketCompleted = errors.New("ticket already completed")

// faultKind is what a stage did with a ticket that had no reference left.
type faultKind int8

const (
	faultCompleted faultKind = iota // Done, Drop, Fail or a batch completing
	faultPassedOn                   // Outlet.Send
	faultRetained                   // Retain
	faultJoined                     // Join
	faultSplit                      // Split
)

func (k faultKind) String() string {
	switch k {
	case faultPassedOn:
		return "the stage passed on a value whose ticket was already completed: a stage must not complete a value (Done, Drop, Fail) it passes on"
	case faultRetained:
		return "Retain of a ticket already completed"
	case faultJoined:
		return "Join of a ticket already completed"
	case faultSplit:
		return "Split of a joined ticket already completed"
	}
	return "a ticket was completed once more than it was referenced: a stage completed a value and still passed it on, or completed one value twice"
}

// ticketFault is a partition's first ticket misuse.
type ticketFault struct {
	kind   faultKind
	offset int64 // of the ticket's record while its slot is live; -1 otherwise
}

// faultLocked records the partition's first fault, a misuse of t, and
// returns it; nil when there was one already (it is reported once).
// Callers hold tr.mu.
func (tr *tracker) faultLocked(t Ticket, kind faultKind) *ticketFault {
	if tr.fault != nil {
		return nil
	}
	f := &ticketFault{kind: kind, offset: -1}
	if !t.joined() {
		if s := tr.slotOf(t); s != nil {
			f.offset = s.rec.Offset
		}
	}
	tr.fault = f
	return f
}

// heldLocked reports whether t still has a reference (the zero Ticket
// always has). Callers hold tr.mu. It is called per value of every chunk
// a stage passes on and of every join: its common case, a record ticket
// within the live slots while none completed early, is one unsigned
// comparison (a joined ticket, or the zero one, falls outside it) small
// enough to inline.
func (tr *tracker) heldLocked(t Ticket) bool {
	if tr.early == 0 && t.id-1-tr.base < uint64(tr.size) {
		return true
	}
	return tr.heldSlow(t)
}

func (tr *tracker) heldSlow(t Ticket) bool {
	if t.joined() {
		return tr.joinOf(t) != nil
	}
	seq := t.id - 1
	switch {
	case t.id == 0:
		return true
	case seq < tr.base || seq >= tr.base+uint64(tr.size):
		return false
	}
	return tr.early == 0 || tr.q.at(seq).refs > 0
}

// unheld checks, under one lock, that every value of c has a ticket with
// a reference left, and returns the partition's first fault otherwise.
func unheld[T any](tr *tracker, c []Item[T]) *ticketFault {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.fault != nil || tr.dropped {
		return nil
	}
	for i := range c {
		if t := c[i].Ticket; !tr.heldLocked(t) {
			return tr.faultLocked(t, faultPassedOn)
		}
	}
	return nil
}

// misused stops Run with the *StageError of f, s's partition's first
// ticket fault, also while the partition is being taken away (it is the
// stage's mistake, not the revoke's), and stops the partition's graph at
// once: its context is cancelled with that error.
func (s *Stage) misused(f *ticketFault) {
	if f == nil {
		return
	}
	g := s.g
	err := &StageError{Stage: s.name, Topic: g.tp.Topic, Partition: g.tp.Partition, Offset: f.offset,
		Err: fmt.Errorf("%w: %v; nothing more of the partition is committed", ErrTicketCompleted, f.kind)}
	g.rt.fail(nil, err)
	g.cancel(err)
}
