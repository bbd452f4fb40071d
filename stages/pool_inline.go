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
// the first failed value, once the calls turn slow, or when the hedge
// finds a call blocked, c goes to the emitter (which has nothing before
// it) and the stage's goroutine goes on claiming values as one of c's
// workers: the emitter sends the finished values before a blocked call
// (so they commit), a failure as soon as the values before it, and its
// failure stops the calls as in the workers' path; slow calls also post
// c for a worker.
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
			handed = true
			p.hedge.handOver()
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
		slow, handed = true, true
		p.hedge.handOver()
		if i+1 < n {
			p.help(pc, 0, p.queues[0])
		}
	}
	handed = p.hedge.disarm()
	p.fast.Store(!slow && own == n && time.Since(start) <= time.Duration(n)*fastCall)
	if handed {
		// The emitter emits c, and whichever of it and this goroutine
		// lets go of c last recycles it.
		p.release(c)
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

// hedge watches the chunk the stage's goroutine works on: a timer checks
// every hedgeAfter whether the goroutine claimed another value since the
// check before, and when it did not (a call is blocked) hands the chunk
// to the emitter, which sends the finished values before the call, and
// posts it for a worker, which takes the values after it. Armed for one
// chunk at a time, by the stage's goroutine.
type hedge[In, Out any] struct {
	p  *workerPool[In, Out]
	mu sync.Mutex
	// pc is the chunk being worked on (pc.c is nil when none). The chunk
	// is not recycled before disarm: the stage's goroutine holds a
	// reference to it until then.
	pc     piece[In, Out]
	seen   uint32 // pc's next unclaimed index at the previous check
	handed bool   // pc went to the emitter
	t      *time.Timer
}

func (h *hedge[In, Out]) init(p *workerPool[In, Out]) {
	h.p = p
	h.t = time.AfterFunc(time.Hour, h.check)
	h.t.Stop()
}

// unseen is a claim index no chunk reaches: the first check after arm
// only notes where the goroutine is, so that a check due for the chunk
// before, running late, never takes a chunk just armed for a blocked one.
const unseen = ^uint32(0)

// arm starts watching pc.
func (h *hedge[In, Out]) arm(pc piece[In, Out]) {
	h.mu.Lock()
	h.pc, h.seen, h.handed = pc, unseen, false
	h.mu.Unlock()
	h.t.Reset(hedgeAfter)
}

// disarm stops watching and reports whether the chunk went to the
// emitter; nothing is posted for the chunk afterwards.
func (h *hedge[In, Out]) disarm() bool {
	h.mu.Lock()
	handed := h.handed
	h.pc, h.handed = piece[In, Out]{}, false
	h.mu.Unlock()
	h.t.Stop()
	return handed
}

// stop disarms the hedge for good (the stage is ending).
func (h *hedge[In, Out]) stop() {
	if h.t != nil {
		h.disarm()
	}
}

// handOver gives the watched chunk to the emitter, unless it went
// already: the first of the stage's goroutine and the timer to call it
// does. The stage's goroutine keeps a reference to it. The emitter has
// no chunk queued while a chunk is watched (inline runs only then), so
// the send does not block.
func (h *hedge[In, Out]) handOver() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handOverLocked()
}

func (h *hedge[In, Out]) handOverLocked() {
	if h.handed || h.pc.c == nil {
		return
	}
	h.handed = true
	h.pc.c.refs.Store(2)
	h.p.outstanding.Add(1)
	h.p.ordered <- h.pc.c
}

// check runs on the timer's goroutine: when no value was claimed since
// the previous check and values are left, it hands the chunk to the
// emitter and posts it for a worker; otherwise it checks again after
// hedgeAfter.
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
	h.handOverLocked()
	if int(next) < pc.n {
		h.p.help(pc, 0, h.p.queues[0])
	}
}
