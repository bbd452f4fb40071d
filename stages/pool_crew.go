package stages

import (
	"context"
	"sync"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// crew starts a Pool's workers when there is work for them and lets them
// go when there is none, so that a partition whose pool is idle holds no
// worker goroutine (a consumer of many partitions would otherwise keep
// workers goroutines, and their stacks, per partition). Each queue has at
// most limit workers: the pool's workers for the one queue of an unkeyed
// pool, one per queue with a key (its values stay in order).
//
// No piece is left without a worker: a worker leaves only after it saw
// its queue empty while holding mu, and whoever posts a piece calls
// posted after the piece is in the queue, which takes mu and starts a
// worker unless limit are running. A worker started for a piece another
// worker took finds the queue empty and leaves.
type crew struct {
	ctx     context.Context // the pool's: done when its emitter failed or the partition ends
	s       *stagekit.Stage
	mu      sync.Mutex
	running []int // workers running per queue
	limit   int
	// spare holds the workers that left, for the next ones: a worker's
	// probe lives as long as the graph (stagekit.Stage.Probe), so a
	// worker started again reuses one instead of adding one, and starting
	// a worker allocates nothing but its goroutine's closure.
	spare []*worker
	start func(w *worker)
}

// worker is what one worker goroutine runs with: its queue and the probe
// of its calls.
type worker struct {
	queue int
	probe *stagekit.Probe
}

func newCrew(ctx context.Context, s *stagekit.Stage, queues, limit int, start func(w *worker)) *crew {
	return &crew{ctx: ctx, s: s, running: make([]int, queues), limit: limit, start: start}
}

// posted is called after a piece was put into queue q: it starts a worker
// for q unless limit are running or the pool's context is done (nothing
// it would compute is emitted then, and a partition given up on after
// its exit grace must not gain a goroutine or a probe).
func (c *crew) posted(q int) {
	c.mu.Lock()
	if c.running[q] >= c.limit || c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	c.running[q]++
	var w *worker
	if n := len(c.spare); n > 0 {
		w, c.spare = c.spare[n-1], c.spare[:n-1]
	}
	c.mu.Unlock()
	if w == nil {
		w = &worker{probe: c.s.Probe()}
	}
	w.queue = q
	c.start(w)
}

// leave is called by worker w when it found nothing to do: it reports
// whether w leaves, which it does when empty (called with mu held) is
// true; w is then kept for a worker started later.
func (c *crew) leave(w *worker, empty func() bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !empty() {
		return false
	}
	c.running[w.queue]--
	c.spare = append(c.spare, w)
	return true
}

// enlist counts a goroutine that is not one of the crew's (a dispatcher
// whose call blocks, pool_intake.go) among queue q's workers, unless
// limit run already or the pool's context is done (then no goroutine
// should start for it): then it reports false.
func (c *crew) enlist(q int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[q] >= c.limit || c.ctx.Err() != nil {
		return false
	}
	c.running[q]++
	return true
}

// discharge undoes enlist once that goroutine is done, and starts a
// worker for q if pieces wait there (waiting is called after the count
// went down): a piece posted while the enlisted goroutine made limit
// started none.
func (c *crew) discharge(q int, waiting func() bool) {
	c.mu.Lock()
	c.running[q]--
	c.mu.Unlock()
	if waiting() {
		c.posted(q)
	}
}
