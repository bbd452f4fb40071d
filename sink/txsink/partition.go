package txsink

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// partWriter is one partition's Write stage: its open batch and, in
// exactly-once mode, its position. It runs on the stage's goroutine.
type partWriter[T any] struct {
	w     *Writer[T]
	s     *stagekit.Stage
	tp    pipeline.TopicPartition
	pr    *stagekit.Probe
	timer *stagekit.Timer

	vals    []T
	tickets []stagekit.Ticket
	offs    []int64 // exactly-once: each value's record offset
	weight  int

	eos     bool
	group   string
	pos     Position       // the position claimed, then the last stored
	invalid map[int64]bool // pos.Invalid
	last    int64          // offset of the last value received, -1 before
	fenced  bool           // another member claimed the partition

	// Set by an attempt (commit.go) for the batch being written.
	bad    []badValue
	stored Position // the position its transaction stores
	unsure bool     // its last Commit failed, and whether it committed is not known
}

// badValue is a value of the batch the store refused.
type badValue struct {
	i   int
	err error
}

// chunk adds a received chunk's values to the batch, writing the batch
// each time it is full.
func (p *partWriter[T]) chunk(chunk []stagekit.Item[T]) error {
	for _, it := range chunk {
		if p.fenced {
			return nil // never completed: the partition is someone else's
		}
		off := int64(-1)
		if p.eos {
			var skip bool
			var err error
			off, skip, err = p.order(it.Ticket)
			if err != nil {
				return p.s.Fail(it.Ticket, err)
			}
			if skip {
				p.s.Done(it.Ticket)
				continue
			}
		}
		w := 0
		if p.w.o.Weigh != nil {
			v, err := stagekit.Protect(p.s.Context(), it.Value, func(_ context.Context, v T) (int, error) { return p.w.o.Weigh(v), nil })
			if err != nil {
				return p.s.Fail(it.Ticket, err)
			}
			w = v
		}
		if len(p.vals) > 0 && p.w.o.BatchBytes > 0 && p.weight+w > p.w.o.BatchBytes {
			if err := p.flush(); err != nil {
				return err
			}
		}
		if len(p.vals) == 0 {
			p.timer.Arm(p.w.o.Linger)
		}
		p.vals = append(p.vals, it.Value)
		p.tickets = append(p.tickets, it.Ticket)
		p.offs = append(p.offs, off)
		p.weight += w
		if len(p.vals) >= p.w.o.BatchSize || (p.w.o.BatchBytes > 0 && p.weight >= p.w.o.BatchBytes) {
			if err := p.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// order checks, in exactly-once mode, that the value holding t comes
// from one record, after the last one, and reports whether the store
// has its row already (skip).
func (p *partWriter[T]) order(t stagekit.Ticket) (off int64, skip bool, err error) {
	off, ok := p.s.RecordOffset(t)
	if !ok {
		return 0, false, fmt.Errorf("%s: exactly-once needs each value to come from one record: this value stands for several (a Batch before the Writer?)", p.w.o.Name)
	}
	if off <= p.last {
		return 0, false, fmt.Errorf("%s: exactly-once needs values in offset order, one per record: offset %d came after offset %d (a Pool that reorders, or a FlatMap, before the Writer?)", p.w.o.Name, off, p.last)
	}
	p.last = off
	return off, off <= p.pos.Written && !p.invalid[off], nil
}
