package franz

import (
	"context"
	"slices"
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
// dead letter that finds the buffer full waits in Send, in line
// (firstRoom): the stages' reservations leave room for every dead letter
// in line (reserveRoom counts them as buffered), the dead letters go in
// in the order they came, and a report that frees room while one waits
// wakes them.

// firstRoom is the line of dead letters waiting for room in kgo's
// buffer, oldest first, with the bytes of their messages, and the channel
// closed when the one first in line may find room (a report freed some,
// or the one before it left the line; nil while nobody waits on it); all
// under Producer.reserve. waiting mirrors len(line) for the promise,
// which reads it without the lock.
type firstRoom struct {
	line    []*firstWaiter
	bytes   int64
	freed   chan struct{}
	waiting atomic.Int64
	// joined, nil but in tests, gets a value (without blocking) each
	// time a dead letter joins the line.
	joined chan struct{}
}

// firstWaiter is one dead letter in line: its size as kgo counts it.
type firstWaiter struct{ size int64 }

// sendFirst hands os (one message) to kgo once it fits in the buffer and
// the dead letters before it went in, waiting ahead of the stages while
// it does not. When ctx ends first it returns errBufferFull, having taken
// nothing (the caller's wait for a full buffer then returns ctx's cause);
// once Close started, ErrClosed.
func (p *Producer) sendFirst(ctx context.Context, os []produce.Outgoing, reports chan produce.Event) error {
	size := messageSize(&os[0].Message)
	var w *firstWaiter // set once it joins the line
	for {
		freed, err := p.reserveFirst(size, &w)
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
			p.leaveLine(w)
			return errBufferFull
		case <-p.tr.ClosingContext().Done():
			p.leaveLine(w)
			return p.tr.Names().ErrClosed
		}
	}
}

// reserveFirst counts a message of size bytes as buffered (and pending:
// Tracker.Admit) when it fits and no dead letter waits before it (*w, the
// message's place in line, is nil until it joins); otherwise it returns
// errBufferFull with the channel to wait on, the message in line. A
// message larger than kgo.MaxBufferedBytes goes to kgo at once (full),
// which fails it. ErrClosed once Close started.
func (p *Producer) reserveFirst(size int64, w **firstWaiter) (<-chan struct{}, error) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	if p.tr.Closing() {
		p.leaveLineLocked(*w)
		return nil, p.tr.Names().ErrClosed
	}
	records, bytes := p.buffered.load()
	if *w == nil {
		if len(p.first.line) == 0 && !p.full(records, bytes, size) {
			return nil, p.reserveLocked(size)
		}
		// In line before the buffer is read again: a report that frees
		// room after that read sees it waiting, and wakes it (roomFreed).
		*w = &firstWaiter{size: size}
		p.first.line = append(p.first.line, *w)
		p.first.bytes += size
		p.first.waiting.Add(1)
		if p.first.joined != nil {
			select {
			case p.first.joined <- struct{}{}:
			default:
			}
		}
		records, bytes = p.buffered.load()
	}
	if p.first.line[0] != *w || p.full(records, bytes, size) {
		if p.first.freed == nil {
			p.first.freed = make(chan struct{})
		}
		return p.first.freed, errBufferFull
	}
	p.leaveLineLocked(*w)
	return nil, p.reserveLocked(size)
}

// reserveLocked counts a message of size bytes as buffered and pending.
// Under reserve.
func (p *Producer) reserveLocked(size int64) error {
	if err := p.tr.Admit(1); err != nil {
		return err
	}
	p.buffered.add(1, size)
	p.handing++
	return nil
}

// leaveLine takes a dead letter that gives up out of the line.
func (p *Producer) leaveLine(w *firstWaiter) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	p.leaveLineLocked(w)
}

// leaveLineLocked takes w out of the line, if it is in it (a nil w never
// joined), and wakes the others: the one now first may fit. Under
// reserve.
func (p *Producer) leaveLineLocked(w *firstWaiter) {
	i := slices.Index(p.first.line, w)
	if w == nil || i < 0 {
		return
	}
	p.first.line = slices.Delete(p.first.line, i, i+1)
	p.first.bytes -= w.size
	p.first.waiting.Add(-1)
	p.wakeLineLocked()
}

// roomFreed wakes the dead letters in line; the promise calls it after
// each report, once it freed the room of its record (a dead letter joins
// the line before it reads the buffer, so one of the two sees the other).
func (p *Producer) roomFreed() {
	if p.first.waiting.Load() == 0 {
		return
	}
	p.reserve.Lock()
	defer p.reserve.Unlock()
	p.wakeLineLocked()
}

// wakeLineLocked closes the channel the line waits on. Under reserve.
func (p *Producer) wakeLineLocked() {
	if p.first.freed != nil {
		close(p.first.freed)
		p.first.freed = nil
	}
}
