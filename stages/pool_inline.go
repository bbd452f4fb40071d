package stages

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// This file is how an unkeyed Pool makes fast calls: on the goroutine
// taking its input (the stage's own, or a relief, pool_intake.go).
// Handing a value to a worker and its result to the emitter costs two
// goroutine hand-offs per chunk, more than a call that takes well under a
// microsecond. So while the calls are fast (under fastCall each, as
// measured by that goroutine or by the workers) and the emitter has
// nothing left to emit, the goroutine claims the chunk's values itself,
// one at a time, and emits the chunk. At the first failed value the chunk
// goes to the emitter and the goroutine goes on as one of its workers.
// When a group of calls took longer than its share of fastCall, the chunk
// goes to the emitter, a worker takes the goroutine's place (each worker
// that joins posts the chunk again, as in the workers' path) and the
// goroutine goes back to the input; the following chunks go to the
// workers until their calls are fast again. When one call runs for one to
// two hedgeAfter, the hedge hands the chunk over, posts it for a worker
// and starts a relief that takes the input. Either the goroutine emits
// the whole chunk or the emitter does, after everything emitted before.

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

// inline makes the calls of c on dispatcher d and emits it. At the first
// failed value c goes to the emitter (which has nothing before it), so
// that the failure is emitted as soon as the values before it, and d goes
// on claiming values as one of c's workers. Once the calls turn slow, c
// goes to the emitter and d leaves the rest to the workers and goes back
// to the input, as the workers' path does; so does a d the hedge relieved
// (pool_intake.go) once its blocked call returned, and it then stops
// taking input.
func (p *workerPool[In, Out]) inline(ctx context.Context, d *dispatcher, c *poolChunk[In, Out]) error {
	n := len(c.items)
	pc := piece[In, Out]{c: c, gen: uint32(c.claim.Load() >> 32), n: n}
	p.hedge.arm(d, pc)
	start := time.Now()
	group, size, calls := start, 1, 0
	own, handed, slow := 0, false, false
	for {
		i := c.claimNext(pc.gen, n)
		if i < 0 {
			break
		}
		p.compute(ctx, d.probe, c, i)
		d.calls.Add(1)
		own++
		if (slow || d.relieved.Load()) && p.leave(pc) {
			break
		}
		if !handed && c.errs[i] != nil {
			handed = true
			p.hedge.handOver(d)
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
		slow, calls, size = true, 0, math.MaxInt
		p.hedge.handOver(d)
		if p.leave(pc) {
			break
		}
	}
	handed, relieved := p.hedge.disarm(d)
	p.fast.Store(!slow && own == n && time.Since(start) <= time.Duration(n)*fastCall)
	if handed {
		// The emitter emits c, and whichever of it and d lets go of c
		// last recycles it.
		p.release(c)
		if relieved {
			p.stepDown(d)
			return errRelieved
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

// leave reports whether the dispatcher may stop claiming values of pc's
// chunk (which went to the emitter): when none is left unclaimed, or once
// the chunk is posted for a worker that takes its place (the chunk's
// count of helpers stays as it is) and, room and the workers limit
// permitting, for one more: the dispatcher goes back to the input and may
// fill the queue with the next chunks' pieces before the first worker
// claimed a value, and a worker that blocks on its first value could then
// post no helper, holding every value after it. With the queue full it
// reports false, and the dispatcher goes on claiming.
func (p *workerPool[In, Out]) leave(pc piece[In, Out]) bool {
	if int(uint32(pc.c.claim.Load())) >= pc.n {
		return true
	}
	select {
	case p.queues[0] <- pc:
		p.crew.posted(0)
	default:
		return false
	}
	if int(uint32(pc.c.claim.Load()))+1 < pc.n {
		p.help(pc, 0, p.queues[0])
	}
	return true
}

// hedge watches the chunk a dispatcher works on: a timer checks every
// hedgeAfter whether the dispatcher made another call since the check
// before, and when it did not (a call is blocked) hands the chunk to the
// emitter, which sends the finished values before the call, posts it for
// a worker, which takes the values after it, and starts a dispatcher that
// takes the input over (pool_intake.go). Armed for one chunk at a time,
// by the dispatcher taking the input.
type hedge[In, Out any] struct {
	p   *workerPool[In, Out]
	ctx context.Context // the pool's
	mu  sync.Mutex
	// owner is the dispatcher whose chunk pc is watched (nil when none).
	// The chunk is not recycled before the owner disarmed: it holds a
	// reference to it until then.
	owner *dispatcher
	pc    piece[In, Out]
	seen  uint32 // the owner's calls at the previous check
	noted bool   // seen holds a count for the chunk watched
	t     *time.Timer
}

func (h *hedge[In, Out]) init(ctx context.Context, p *workerPool[In, Out]) {
	h.p, h.ctx = p, ctx
	h.t = time.AfterFunc(time.Hour, h.check)
	h.t.Stop()
}

// arm starts watching pc, the chunk of d.
func (h *hedge[In, Out]) arm(d *dispatcher, pc piece[In, Out]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The first check only notes the owner's calls, so that a check due
	// for the chunk before, running late, never takes a chunk just armed
	// for a blocked one.
	h.owner, h.pc, h.noted = d, pc, false
	d.handed = false
	h.t.Reset(hedgeAfter)
}

// disarm stops watching the chunk of d, if it is still watched, and
// reports whether the chunk went to the emitter and whether d was
// relieved; nothing is posted for the chunk afterwards. (Once d's chunk
// went to the emitter and was emitted, its relief may have armed the
// hedge for a chunk of its own already.)
func (h *hedge[In, Out]) disarm(d *dispatcher) (handed, relieved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner == d {
		h.owner, h.pc = nil, piece[In, Out]{}
		h.t.Stop()
	}
	return d.handed, d.relieved.Load()
}

// stop disarms the hedge for good (the stage is ending).
func (h *hedge[In, Out]) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owner, h.pc = nil, piece[In, Out]{}
	h.t.Stop()
}

// handOver gives the chunk of d to the emitter, unless it went already
// (the first of d and the timer to call it does) or is no longer watched
// (d was relieved, and its relief armed the hedge for a chunk of its
// own). d keeps a reference to it. The emitter has no chunk queued while
// a chunk is watched (inline runs only then), so the send does not block.
func (h *hedge[In, Out]) handOver(d *dispatcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner == d {
		h.handOverLocked()
	}
}

func (h *hedge[In, Out]) handOverLocked() {
	if h.owner == nil || h.owner.handed {
		return
	}
	h.owner.handed = true
	h.pc.c.refs.Store(2)
	h.p.outstanding.Add(1)
	h.p.ordered <- h.pc.c
}

// check runs on the timer's goroutine: when the owner made no call since
// the previous check, a call of it blocks: it hands the chunk to the
// emitter, posts it for a worker if values are left, and has a relief
// dispatcher take the input over (or checks again after hedgeAfter while
// the crew has no room for the blocked one). Otherwise it checks again
// after hedgeAfter.
func (h *hedge[In, Out]) check() {
	h.mu.Lock()
	defer h.mu.Unlock()
	pc := h.pc
	if h.owner == nil {
		return
	}
	if calls := h.owner.calls.Load(); !h.noted || calls != h.seen {
		h.seen, h.noted = calls, true
		h.t.Reset(hedgeAfter)
		return
	}
	h.handOverLocked()
	if int(uint32(pc.c.claim.Load())) < pc.n {
		h.p.help(pc, 0, h.p.queues[0])
	}
	if !h.owner.relieved.Load() && !h.p.relieveLocked(h.ctx, h.owner) {
		h.t.Reset(hedgeAfter)
	}
}
