package stages

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// This file is who takes a Pool's input. The stage's own goroutine does,
// and makes fast calls itself (pool_inline.go); while one of those calls
// blocks, the pool's input would wait for it. So when the hedge finds a
// call blocked it also starts another goroutine that takes the input over
// (a relief dispatcher), and the blocked one, once its call returned,
// leaves the rest of its chunk to a worker (or finishes it, while the
// workers' queue is full) and stops taking input.
// A relief dispatcher may in turn be relieved the same way. The one taking
// the input when it ends (closed, or the partition's context done) hands
// its result to the stage's goroutine, which returns it.
//
// A blocked dispatcher counts as one of the crew's workers from the
// moment it is relieved until it is done with its chunk, so the pool
// still makes at most workers calls at once; while the crew has workers
// running already, the relief waits for the next check of the hedge.

// dispatcher is a goroutine taking the pool's input.
type dispatcher struct {
	probe *stagekit.Probe // the probe of its calls
	// calls counts the calls it made on its chunks: the hedge reads it
	// to tell whether this goroutine is blocked in one (the chunk's claim
	// counter also moves when workers claim its values).
	calls atomic.Uint32
	// relieved is set once another dispatcher takes the input (it is
	// read after each call, without the hedge's mutex).
	relieved atomic.Bool
	handed   bool // the chunk it works on went to the emitter; guarded by the hedge's mutex
}

// errRelieved ends the input loop of a dispatcher that was relieved.
var errRelieved = errors.New("stages: the pool's input went to another goroutine")

// takeInput runs the input loop of dispatcher d until the input ends, the
// partition's context is done or d is relieved (errRelieved).
func (p *workerPool[In, Out]) takeInput(ctx context.Context, d *dispatcher) error {
	return stagekit.RunLoop(p.s, p.in, stagekit.Loop[In, struct{}]{
		OnChunk: func(items []stagekit.Item[In]) error { return p.dispatch(ctx, d, items) },
		Wake:    ctx.Done,
		OnWake:  func() error { return stagekit.ErrStop }, // the emitter failed
	})
}

// relieveLocked starts a dispatcher that takes the input over from the
// owner of the hedge, whose call blocks, unless the crew has its workers
// running already or the pool's context is done (then it reports false).
// Called with the hedge's mutex held.
func (p *workerPool[In, Out]) relieveLocked(ctx context.Context, blocked *dispatcher) bool {
	if !p.crew.enlist(0) {
		return false
	}
	blocked.relieved.Store(true)
	d := &dispatcher{probe: p.spareProbeLocked()}
	p.relief.Add(1)
	go func() {
		defer p.relief.Done()
		err := p.relievedRun(ctx, d)
		if err == errRelieved {
			return // its relief reports the result
		}
		p.result <- err
	}()
	return true
}

// relievedRun is takeInput for a relief dispatcher, whose panic (there
// is no user code on it outside stagekit.Call, which catches the user's)
// becomes the stage's error instead of ending the process.
func (p *workerPool[In, Out]) relievedRun(ctx context.Context, d *dispatcher) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("stages: Pool's input goroutine panicked: %v\n\n%s", v, debug.Stack())
		}
	}()
	return p.takeInput(ctx, d)
}

// stepDown is called by a relieved dispatcher once it is done with its
// chunk: it leaves the crew (starting a worker if pieces wait for one)
// and gives its probe back for the next relief.
func (p *workerPool[In, Out]) stepDown(d *dispatcher) {
	p.crew.discharge(0, func() bool { return len(p.queues[0]) > 0 })
	p.hedge.mu.Lock()
	p.probes = append(p.probes, d.probe)
	p.hedge.mu.Unlock()
}

// spareProbeLocked returns a probe for a relief dispatcher: probes live as
// long as the graph, so those of dispatchers that stepped down are reused.
// Called with the hedge's mutex held.
func (p *workerPool[In, Out]) spareProbeLocked() *stagekit.Probe {
	if n := len(p.probes); n > 0 {
		pr := p.probes[n-1]
		p.probes = p.probes[:n-1]
		return pr
	}
	return p.s.Probe()
}
