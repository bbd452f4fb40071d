package stages

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// This file is how an unkeyed Pool makes fast calls: on its own
// goroutine. Handing a value to a worker and its result to the emitter
// costs two goroutine hand-offs per chunk, more than a call that takes
// well under a microsecond. So while the calls are fast (under fastCall
// each, as measured by the stage's goroutine or by the workers) and the
// emitter has nothing left to emit, the stage's goroutine claims the
// chunk's values itself, one at a time, and emits the chunk. As soon as
// the calls turn slow the workers join: a group of calls that took longer
// than their share of fastCall posts the chunk for a worker at once, and
// a single call still running after hedgeAfter has the hedge post it.
// Each worker that joins posts it again, as in the workers' path, so a
// slow chunk keeps every worker busy; the emitter then emits it, and the
// following chunks go to the workers until their calls are fast again.
// A chunk any worker took a value of is always emitted by the emitter,
// in order after what the stage's goroutine emitted before.

const (
	// fastCall is the longest call the pool's own goroutine keeps
	// making: below it, the hand-offs to a worker and back cost more
	// than the call.
	fastCall = 5 * time.Microsecond
	// maxGroup is the most calls between two readings of the clock.
	maxGroup = 32
	// hedgeAfter is how long one call may run on the stage's goroutine
	// before the workers join in on the rest of its chunk (between one
	// and two hedgeAfter).
	hedgeAfter = time.Millisecond
)

// inline makes the calls of c on the stage's goroutine and emits it. At
// the first failed value, or once the calls turn slow, it hands c to the
// emitter (which has nothing before it) and goes on claiming values as
// one of c's workers: a failure is emitted as soon as the values before
// it are, and stops the calls as in the workers' path; slow calls also
// post c for a worker. A chunk that a worker the hedge posted took values
// of goes to the emitter too.
func (p *workerPool[In, Out]) inline(ctx context.Context, c *poolChunk[In, Out]) error {
	n := len(c.items)
	pc := piece[In, Out]{c: c, gen: uint32(c.claim.Load() >> 32), n: n}
	p.hedge.arm(pc)
	start := time.Now()
	group, size, calls := start, 1, 0
	own, handed, slow := 0, false, false
	for {
		i := c.claimNext(pc.gen, n)
		if i < 0 {
			break
		}
		p.compute(ctx, p.probe, c, i)
		own++
		if !handed && c.errs[i] != nil {
			if handed = true; !p.toEmitter(ctx, c) {
				p.hedge.disarm()
				return stagekit.ErrStop
			}
		}
		if slow {
			continue
		}
		// The clock is read after 1, 2, 4, ... maxGroup calls, then
		// every maxGroup: a slow function is noticed after its first
		// call, a fast one costs a reading per maxGroup calls.
		if calls++; calls < size {
			continue
		}
		now := time.Now()
		if now.Sub(group) <= time.Duration(calls)*fastCall {
			group, calls, size = now, 0, min(2*size, maxGroup)
			continue
		}
		slow = true
		if !handed {
			if handed = true; !p.toEmitter(ctx, c) {
				p.hedge.disarm()
				return stagekit.ErrStop
			}
		}
		if i+1 < n {
			p.help(pc, 0, p.queues[0])
		}
	}
	p.hedge.disarm()
	p.fast.Store(!slow && own == n && time.Since(start) <= time.Duration(n)*fastCall)
	switch {
	case handed:
		return nil
	case own < n:
		// A worker the hedge posted took values of c: the emitter
		// emits it once they finished.
		if !p.toEmitter(ctx, c) {
			return stagekit.ErrStop
		}
		return nil
	}
	_, sent, err := emitFinished(p.s, p.out, c, 0)
	p.recycle(c)
	if err != nil {
		return err
	}
	if !sent {
		return stagekit.ErrStop
	}
	return nil
}

// hedge lets the workers join a chunk whose values the stage's goroutine
// claims while one call of it runs long: a timer checks every hedgeAfter
// whether the goroutine claimed another value since the check before,
// and posts the chunk for a worker when it did not. Armed for one chunk
// at a time, by the stage's goroutine.
type hedge[In, Out any] struct {
	p  *workerPool[In, Out]
	mu sync.Mutex
	// pc is the chunk being worked on (pc.c is nil when none): once
	// disarm cleared it, the timer posts nothing for that chunk, so the
	// chunk can be recycled.
	pc   piece[In, Out]
	seen uint32 // pc's next unclaimed index at the previous check
	t    *time.Timer
}

func (h *hedge[In, Out]) init(p *workerPool[In, Out]) {
	h.p = p
	h.t = time.AfterFunc(time.Hour, h.check)
	h.t.Stop()
}

// arm starts watching pc.
func (h *hedge[In, Out]) arm(pc piece[In, Out]) {
	h.mu.Lock()
	h.pc, h.seen = pc, uint32(pc.c.claim.Load())
	h.mu.Unlock()
	h.t.Reset(hedgeAfter)
}

// disarm stops watching: no piece is posted for the chunk afterwards.
func (h *hedge[In, Out]) disarm() {
	h.mu.Lock()
	h.pc = piece[In, Out]{}
	h.mu.Unlock()
	h.t.Stop()
}

// stop disarms the hedge for good (the stage is ending).
func (h *hedge[In, Out]) stop() {
	if h.t != nil {
		h.disarm()
	}
}

// check runs on the timer's goroutine: it posts the chunk for a worker
// when no value was claimed since the previous check and values are
// left, and otherwise checks again after hedgeAfter.
func (h *hedge[In, Out]) check() {
	h.mu.Lock()
	defer h.mu.Unlock()
	pc := h.pc
	if pc.c == nil {
		return
	}
	next := uint32(pc.c.claim.Load())
	if next != h.seen {
		h.seen = next
		h.t.Reset(hedgeAfter)
		return
	}
	if int(next) < pc.n {
		h.p.help(pc, 0, h.p.queues[0])
	}
}
