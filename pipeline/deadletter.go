package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
)

// deadLetterJob is one invalid value waiting for the dead-letter
// destination: the records behind its ticket, in offset order.
type deadLetterJob struct {
	stage *Stage
	t     Ticket
	recs  []Record
	err   error
}

// deadLetterQueue is how many invalid values a partition may have waiting
// for the dead-letter destination before the stage that found them waits.
const deadLetterQueue = 256

// deadLetter queues an invalid value for the partition's dead-letter
// goroutine, so the stage goes on while the dead letter is delivered. The
// value's ticket completes only after delivery. It returns false when the
// partition context ended first, or when the graph already exited (a
// shared batch can fail values of a partition that is gone).
func (g *graph) deadLetter(j deadLetterJob) bool {
	g.dlmu.RLock()
	defer g.dlmu.RUnlock()
	if g.dlClosed {
		return false
	}
	select {
	case g.dlq <- j:
		return true
	case <-g.ctx.Done():
		return false
	}
}

// sendDeadLetters delivers queued dead letters one at a time, in the order
// the stages found them, until the queue is closed (after every stage
// exited). After a delivery failure, nothing more is delivered or
// completed.
func (g *graph) sendDeadLetters() {
	fn := g.rt.cfg.deadLetter
	failed := fn == nil // then nothing is ever queued
	for j := range g.dlq {
		if failed {
			continue
		}
		for _, r := range j.recs {
			if err := g.deliverDeadLetter(fn, DeadLetter{Record: r, Stage: j.stage.name, Err: j.err}); err != nil {
				g.rt.fail(g, j.stage.stageError([]Record{r},
					fmt.Errorf("dead-letter delivery failed: %w (record was invalid: %v)", err, j.err)))
				failed = true
				break
			}
		}
		if !failed {
			for range j.recs {
				g.rt.obs.RecordDeadLettered(g.tp, j.stage.name)
			}
			g.tr.done(j.t)
		}
	}
}

// deliverDeadLetter calls fn, retrying transient failures under Run's
// retry policy (never past the start of a revoke).
func (g *graph) deliverDeadLetter(fn func(context.Context, DeadLetter) error, dl DeadLetter) error {
	p := g.rt.cfg.retry
	for attempt := 1; ; attempt++ {
		err := callDeadLetter(fn, g.ctx, dl)
		if err == nil || !retryable(err) || attempt >= p.Attempts {
			return err
		}
		d := p.delay(attempt)
		g.rt.obs.StageRetry(dl.Stage+" (dead letter)", g.tp, attempt, d, err)
		if !g.sleep(d) {
			return err
		}
	}
}

// callDeadLetter calls fn once, turning a panic into a *PanicError (which
// is never retried).
func callDeadLetter(fn func(context.Context, DeadLetter) error, ctx context.Context, dl DeadLetter) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, dl)
}
