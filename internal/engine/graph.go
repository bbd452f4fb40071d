package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
)

// Builder builds the graph of one partition. Run calls it once each time a
// partition is assigned, from the source's poll goroutine, so it should
// only wire stages and return (no I/O that can block for long). Stages
// start after it returns. It must return an End of the graph fed by in.
type Builder func(p *Partition, in Stream[Record]) End

// graph is one assigned partition's running graph.
type graph struct {
	rt     *Group
	part   *Partition
	tp     TopicPartition
	ctx    context.Context
	cancel context.CancelCauseFunc
	tr     *tracker

	building bool
	buildSeq uint64 // this build's number in buildsStarted (clients.go)
	nstages  int
	stages   []*Stage // in the order they were added
	edges    []edgeInfo
	starts   []func()
	// live counts the feeder and the stage goroutines not exited yet; the
	// last one to exit closes the dead-letter queue (exitOne). ending
	// counts what exited waits for: that, and the dead-letter goroutine
	// once one started (endOne).
	live   atomic.Int32
	ending atomic.Int32
	exited chan struct{}
	dl     deadLetters
	dlLog  retryLog // rate limit of dead-letter retry warnings (retry_log.go)

	// Deliver adds records to the tracker, whose ring is also the input
	// queue of the feeder goroutine (tracker.feed); qmu orders deliveries
	// against stopInput.
	qmu     sync.Mutex
	closing bool
	qsig    chan struct{}
	stop    chan struct{}

	pace     pacer        // the feeder's pacing (pace.go)
	pending  atomic.Int64 // admitted records not yet committable
	paused   bool         // guarded by rt.mu
	waiting  []Record     // delivered, waiting for admission to the budget; guarded by rt.mu
	waitBuf  []Record     // the whole array waiting was cut from, reused (see waitLocked); guarded by rt.mu
	reported int64        // last offset returned by Offsets; poll goroutine only
}

func newGraph(rt *Group, tp TopicPartition) *graph {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(rt.parent))
	g := &graph{
		rt:       rt,
		tp:       tp,
		ctx:      ctx,
		cancel:   cancel,
		exited:   make(chan struct{}),
		qsig:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		dl:       deadLetters{wake: make(chan struct{}, 1)},
		reported: -1,
	}
	g.part = &Partition{Topic: tp.Topic, Partition: tp.Partition, ctx: ctx}
	g.pace.init(rt.cfg.DrainTimeout, rt.cfg.Chunk)
	g.tr = newTracker(&rt.segments, func(n int, b int64) {
		g.pending.Add(int64(-n))
		g.wakeWaitingFeeder()
		rt.release(n, b)
	})
	if rt.hooks.completesRecords() {
		g.tr.onCompleted = func(n int, next int64) { rt.hooks.RecordsCompleted(tp, n, next) }
	}
	g.tr.settled = g.dl.wake
	g.dl.call.Context = ctx
	g.tr.limit = newDLLimiter(rt.cfg.DeadLetterLimit)
	g.tr.onLimit = func(err error) { rt.fail(g, err) }
	return g
}

// build runs the builder and checks the wiring, then starts every stage.
func (g *graph) build(b Builder) error {
	in := newEdge[Record](g, "input", 0)
	g.buildSeq = buildsStarted.Add(1)
	g.building = true
	err := g.buildError(g.wire(b, in))
	g.building = false
	if err != nil {
		g.cancel(err)
		g.close() // hooks registered before the failure still run
		return err
	}
	g.live.Store(int32(len(g.starts) + 1))
	g.ending.Store(1)
	for _, start := range g.starts {
		go start()
	}
	go g.feed(in)
	return nil
}

// exitOne is the last thing the feeder and each stage goroutine do. The
// last of them closes the dead-letter queue (until every stage exited,
// one may queue a dead letter) and so ends its share of exited.
func (g *graph) exitOne() {
	if g.live.Add(-1) == 0 {
		g.closeDeadLetters()
		g.endOne()
	}
}

// endOne ends one of the things exited waits for (see ending): the graph's
// goroutines, and the dead-letter goroutine if one started. The last one
// closes exited.
func (g *graph) endOne() {
	if g.ending.Add(-1) == 0 {
		close(g.exited)
	}
}

// wire runs the builder and checks what it wired. A wiring mistake is a
// buildPanic; it and any panic of the builder come back as a *PanicError.
func (g *graph) wire(b Builder, in *edge[Record]) (err error) {
	defer CatchPanic(&err)
	end := b(g.part, Stream[Record]{e: in})
	if end.g == nil {
		panic(buildPanic{"the builder returned a zero End; end the graph with a terminal stage such as stages.Each or stages.Discard"})
	}
	if end.g != g {
		panic(buildPanic{"the builder returned an End of another partition's graph"})
	}
	for _, e := range g.edges {
		if from, to := e.ends(); to == "" {
			panic(buildPanic{fmt.Sprintf("the output of %q is never consumed; end it with stages.Each or stages.Discard", from)})
		}
	}
	return nil
}

// buildError turns what wire returned into a *BuildError: a wiring
// mistake names the problem; the builder's own panic is its Err.
func (g *graph) buildError(err error) error {
	var pe *PanicError
	if !errors.As(err, &pe) {
		return err
	}
	if bp, ok := pe.Value.(buildPanic); ok {
		return &BuildError{Topic: g.tp.Topic, Partition: g.tp.Partition, Problem: bp.problem}
	}
	return &BuildError{Topic: g.tp.Topic, Partition: g.tp.Partition,
		Problem: fmt.Sprintf("the builder panicked: %v\n\n%s", pe.Value, pe.Stack), Err: pe}
}

// deliver queues records that weigh b bytes (the sum of their
// recordBytes) for the feeder; false if the graph is closing.
func (g *graph) deliver(recs []Record, b int64) bool {
	g.qmu.Lock()
	if g.closing {
		g.qmu.Unlock()
		return false
	}
	g.tr.addWeighed(recs, b)
	g.pending.Add(int64(len(recs)))
	g.qmu.Unlock()
	select {
	case g.qsig <- struct{}{}:
	default:
	}
	return true
}

// isClosing reports whether the graph stopped taking deliveries.
func (g *graph) isClosing() bool {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	return g.closing
}

// feed moves queued records into the graph, a chunk at a time, paced to
// what the graph can drain (pace.go).
func (g *graph) feed(e *edge[Record]) {
	defer g.exitOne()
	defer close(e.ch)
	p := &g.pace
	defer func() {
		if p.timer != nil {
			p.timer.Stop()
		}
	}()
	out := &Outlet[Record]{e: e, ctx: g.ctx}
	var wake <-chan time.Time // set while waiting for room
	for {
		select {
		case <-g.qsig:
		case <-wake:
			_, _, base := g.tr.backlog()
			p.stalled(base)
		case <-g.stop:
			return
		case <-g.ctx.Done():
			return
		}
		wake = nil
		for {
			select {
			case <-g.stop:
				return // what was not fed yet is dropped, never completed
			default:
			}
			queued, held, base := g.tr.backlog()
			p.observe(time.Now(), base, queued == 0)
			n := min(queued, g.rt.cfg.Chunk)
			if n > 0 && held >= p.limit {
				// Completions (and values kept, done_later.go) signal
				// qsig from now on; one that came before the flag was
				// set shows in a second look, after the values the
				// stages kept completed.
				p.waiting.Store(true)
				g.flushDone()
				if _, held, base = g.tr.backlog(); held >= p.limit {
					wake = p.wait(base)
					p.idle = false
					break
				}
			}
			if p.waiting.Load() {
				p.waiting.Store(false)
			}
			if n = min(n, p.limit-held); n <= 0 {
				p.idle = true // nothing queued: the next observe comes with the next delivery
				break
			}
			p.armed, p.idle = false, false
			buf := g.tr.feed(e.bufferFor(n), n)
			if !out.Send(buf) {
				return
			}
		}
	}
}

// stopping reports whether the partition is being revoked or is gone.
func (g *graph) stopping() bool {
	select {
	case <-g.stop:
		return true
	default:
		return g.ctx.Err() != nil
	}
}

// stopInput stops deliveries and tells the feeder to close the input.
func (g *graph) stopInput() {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	if !g.closing {
		g.closing = true
		close(g.stop)
	}
}

// Drain is a graceful revoke (stoppable). Past the drain timeout the
// partition's context is cancelled; goroutines still running after the
// exit grace are abandoned (abandon.go).
func (g *graph) Drain() {
	start := time.Now()
	g.stopInput()
	t := time.NewTimer(g.rt.cfg.DrainTimeout)
	defer t.Stop()
	timedOut, exited := false, true
	select {
	case <-g.exited:
		g.rt.cfg.Logger.Info("sluice: partition drained", "topic", g.tp.Topic, "partition", g.tp.Partition,
			"drain", time.Since(start).String())
	case <-t.C:
		timedOut = true
		g.drainTimedOut()
		g.cancel(sluice.ErrDrainTimeout)
		if exited = g.awaitExit(); !exited {
			g.abandon("the drain timeout cancelled its context")
		}
	}
	if exited {
		g.close()
	}
	g.cancel(sluice.ErrRevoked)
	g.rt.watch.forget(g) // no stuck report of g after this
	g.rt.hooks.PartitionRevoked(g.tp, time.Since(start), timedOut)
}

// Kill is a lost partition (stoppable). Goroutines still running after
// the exit grace are abandoned (abandon.go).
func (g *graph) Kill() {
	g.stopInput()
	g.cancel(sluice.ErrLost)
	if g.awaitExit() {
		g.close()
	} else {
		g.abandon("the partition was lost")
	}
	g.rt.watch.forget(g) // no stuck report of g after this
	g.rt.hooks.PartitionLost(g.tp)
	g.rt.cfg.Logger.Info("sluice: partition lost", "topic", g.tp.Topic, "partition", g.tp.Partition)
}

// close runs the OnClose hooks, newest first. A hook still running when
// its context expired plus the exit grace is abandoned, and the hooks
// after it do not run.
func (g *graph) close() {
	hooks := g.part.hooks()
	if len(hooks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.rt.parent), g.rt.cfg.DrainTimeout)
	defer cancel()
	for i := len(hooks) - 1; i >= 0; i-- {
		err, returned := g.runHookBounded(hooks[i], ctx)
		if !returned {
			g.rt.abandoned(&StageError{Stage: onCloseStage, Topic: g.tp.Topic, Partition: g.tp.Partition, Offset: -1,
				Err: fmt.Errorf("%w: still running %v after its context expired", sluice.ErrAbandoned, g.rt.exitGrace())})
			return
		}
		if err != nil {
			// nil graph: the partition is being taken away, and a hook
			// failure must still stop Run.
			g.rt.fail(nil, &StageError{Stage: onCloseStage, Topic: g.tp.Topic, Partition: g.tp.Partition, Offset: -1, Err: err})
		}
	}
}

// onCloseStage is the stage name of errors from OnClose hooks.
const onCloseStage = "OnClose"

// runHook calls one OnClose hook, turning a panic into a *PanicError.
func runHook(hook func(context.Context) error, ctx context.Context) (err error) {
	defer CatchPanic(&err)
	return hook(ctx)
}

// wakeWaitingFeeder wakes the feeder while it waits for completions to
// make room (pace.waiting).
func (g *graph) wakeWaitingFeeder() {
	if g.pace.waiting.Load() {
		select {
		case g.qsig <- struct{}{}:
		default:
		}
	}
}
