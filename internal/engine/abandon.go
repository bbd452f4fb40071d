package engine

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/sluice-go/sluice"
)

// This file bounds how long Run waits for user code once it asked it to
// stop. A partition's goroutines get the exit grace, after their context
// was cancelled (the drain timed out, the partition was lost), to return;
// an OnClose hook gets it after its own context expired. A goroutine still
// running then is abandoned: Go cannot stop it, so the runtime stops
// waiting for it, commits nothing past the partition's first unfinished
// record (the tracker never moves past it) and stops Run with an error
// naming what still runs, so that Run returns and a process manager can
// restart the consumer.

// exitGrace is how long goroutines may take to return once their context
// is done before they are abandoned: a quarter of the drain timeout, at
// least a second (a stage may wait, once cancelled, for answers already
// on their way, as a produce stage does for its delivery reports).
func (rt *Group) exitGrace() time.Duration { return max(rt.cfg.DrainTimeout/4, time.Second) }

// awaitExit waits up to the exit grace for every goroutine of g to exit,
// and reports whether they did.
func (g *graph) awaitExit() bool {
	t := time.NewTimer(g.rt.exitGrace())
	defer t.Stop()
	select {
	case <-g.exited:
		return true
	case <-t.C:
		return false
	}
}

// abandon gives up on the goroutines of g still running after the exit
// grace (why: what cancelled its context): nothing more of g is
// dead-lettered, and Run stops with a *StageError naming the first stage
// still running and the partition's first unfinished record. Its OnClose
// hooks do not run: a stage goroutine may still use what they release.
func (g *graph) abandon(why string) {
	g.dl.mu.Lock()
	g.dl.closed, g.dl.failed = true, true
	g.dl.pending.drain()
	g.dl.mu.Unlock()
	g.dl.signal()

	// Values whose call returned before the one still running complete
	// first, so that the error and the commit stop at that one.
	g.flushDone()
	stage, others := g.stillRunning()
	err := &StageError{Stage: stage, Topic: g.tp.Topic, Partition: g.tp.Partition, Offset: g.tr.firstUnfinished(),
		Err: fmt.Errorf("%w: still running %v after %s", sluice.ErrAbandoned, g.rt.exitGrace(), why)}
	if len(others) > 0 {
		err.Err = fmt.Errorf("%w (also still running: %v)", err.Err, others)
	}
	g.rt.abandoned(err)
}

// stillRunning names the stages whose goroutines have not exited, in the
// order they were added (upstream first): the first one and the others.
// When every stage exited, what still runs is the dead-letter function.
func (g *graph) stillRunning() (string, []string) {
	var names []string
	for _, s := range g.stages {
		if s.running.Load() {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return "dead letter", nil
	}
	return names[0], names[1:]
}

// firstUnfinished returns the offset of the first record fed to the graph
// and not finished: where the committed offset stops. -1 when there is
// none.
func (tr *tracker) firstUnfinished() int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.size == 0 || tr.fed <= tr.base {
		return -1
	}
	return tr.q.at(tr.base).rec.Offset
}

// abandoned records err, a user function abandoned, as Run's error (after
// the first one, if any), logs it with every goroutine's stack, and stops
// Run.
func (rt *Group) abandoned(err *StageError) {
	rt.hooks.StageFailed(err.Stage, TopicPartition{Topic: err.Topic, Partition: err.Partition}, err)
	rt.mu.Lock()
	if rt.err == nil {
		rt.err = err
	} else {
		rt.late = append(rt.late, err)
	}
	rt.mu.Unlock()
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	rt.cfg.Logger.Error("sluice: abandoning a function that ignores its context; stopping",
		"topic", err.Topic, "partition", err.Partition, "offset", err.Offset, "stage", err.Stage,
		"err", err, "goroutines", string(buf))
	rt.cancel(err)
}

// runHookBounded runs one OnClose hook on its own goroutine with ctx,
// and waits for it until ctx's deadline plus the exit grace. It reports
// false, leaving the hook running, when it did not return by then.
func (g *graph) runHookBounded(hook func(context.Context) error, ctx context.Context) (err error, returned bool) {
	done := make(chan error, 1)
	go func() { done <- runHook(hook, ctx) }()
	deadline, _ := ctx.Deadline()
	t := time.NewTimer(time.Until(deadline) + g.rt.exitGrace())
	defer t.Stop()
	select {
	case err := <-done:
		return err, true
	case <-t.C:
		return nil, false
	}
}
