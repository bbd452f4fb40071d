package franz

import (
	"context"
	"sync/atomic"

	"github.com/sluice-go/sluice/internal/produce"
)

// This file lets dead letters into kgo's buffer ahead of the Produce
// stages. A stage whose send found the buffer full sends again as soon as
// a report of its own frees room, while a dead letter comes from a
// partition's dead-letter goroutine, which has no report to wait for:
// with the stages keeping the buffer full it would find the room taken
// each time it looked, and the partition's commit would stay behind the
// invalid record for as long as the stages had messages to send. So a
// dead letter that finds the buffer full waits in Send, counted in
// firstRoom: the stages' reservations leave room for it (reserveRoom
// counts it as buffered), and a report that frees room while one waits
// wakes it.

// firstRoom is what the dead letters waiting for room take of kgo's
// buffer: their records and bytes, and the channel a report closes when
// it frees room (nil while nobody waits on it), under Producer.reserve;
// waiting mirrors records for the promise, which reads it without the
// lock.
type firstRoom struct {
	records, bytes int64
	freed          chan struct{}
	waiting        atomic.Int64
}

// sendFirst hands os (one message) to kgo once it fits in the buffer,
// waiting ahead of the stages while it does not, until ctx ends or Close
// starts (ErrClosed).
func (p *Producer) sendFirst(ctx context.Context, os []produce.Outgoing, reports chan produce.Event) error {
	size := messageSize(&os[0].Message)
	waiting := false
	for {
		freed, err := p.reserveFirst(size, &waiting)
		if err == nil {
			p.handOver(os, reports)
			return nil
		}
		if err != errBufferFull {
			return err
		}
		select {
		case <-freed:
		case <-ctx.Done():
			p.stopWaiting(size, &waiting)
			return context.Cause(ctx)
		case <-p.tr.ClosingContext().Done():
			p.stopWaiting(size, &waiting)
			return p.tr.Names().ErrClosed
		}
	}
}

// reserveFirst counts a message of size bytes as buffered (and pending:
// Tracker.Admit) when it fits, ahead of the stages; otherwise it returns
// errBufferFull with the channel to wait on, the message counted among
// the dead letters waiting (once: *waiting says whether it is).
// ErrClosed once Close started.
func (p *Producer) reserveFirst(size int64, waiting *bool) (<-chan struct{}, error) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	if p.tr.Closing() {
		p.leaveFirstLocked(size, waiting)
		return nil, p.tr.Names().ErrClosed
	}
	// Counted as waiting before the buffer is read: a report that frees
	// room after that read sees it waiting, and wakes it (roomFreed).
	if !*waiting {
		*waiting = true
		p.first.records++
		p.first.bytes += size
		p.first.waiting.Add(1)
	}
	records, bytes := p.buffered.load()
	if p.full(records, bytes, size) {
		if p.first.freed == nil {
			p.first.freed = make(chan struct{})
		}
		return p.first.freed, errBufferFull
	}
	p.leaveFirstLocked(size, waiting)
	if err := p.tr.Admit(1); err != nil {
		return nil, err
	}
	p.buffered.add(1, size)
	p.handing++
	return nil, nil
}

// stopWaiting takes a dead letter that gives up out of the waiting ones.
func (p *Producer) stopWaiting(size int64, waiting *bool) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	p.leaveFirstLocked(size, waiting)
}

// leaveFirstLocked takes a dead letter of size bytes out of the waiting
// ones, if it is among them. Under reserve.
func (p *Producer) leaveFirstLocked(size int64, waiting *bool) {
	if !*waiting {
		return
	}
	*waiting = false
	p.first.records--
	p.first.bytes -= size
	p.first.waiting.Add(-1)
}

// roomFreed wakes the dead letters waiting for room; the promise calls
// it after each report, once it freed the room of its record (a dead
// letter counts itself waiting before it reads the buffer, so one of the
// two sees the other).
func (p *Producer) roomFreed() {
	if p.first.waiting.Load() == 0 {
		return
	}
	p.reserve.Lock()
	defer p.reserve.Unlock()
	if p.first.freed != nil {
		close(p.first.freed)
		p.first.freed = nil
	}
}
