package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-go/sluice"
)

// failedDeadLetter is a dead letter whose first call (or deferred wait)
// failed with err, waiting to be retried.
type failedDeadLetter struct {
	it  deadLetterItem
	err error
}

// sendDeadLetters is the partition's dead-letter goroutine. It hands
// queued dead letters to the destination in offset order, one call at a
// time; a destination that defers the outcome (DeferDeadLetter) lets it
// go on to the next one, up to MaxOutstandingDeadLetters outstanding.
// When a dead letter failed, nothing more is handed over until every
// outstanding outcome is known; then the failed ones are retried, in
// offset order, each waiting for its outcome. It returns once the queue
// is closed (after every stage exited) and drained, and every outcome
// is known; after a failure that is final, nothing more is delivered.
func (g *graph) sendDeadLetters() {
	defer g.dl.waiters.Wait()
	fn := g.rt.cfg.DeadLetter
	for {
		it, retry, ok := g.nextDeadLetter()
		switch {
		case !ok:
			return
		case retry != nil:
			if !g.retryDeadLetters(fn, retry) {
				return
			}
		default:
			g.handOver(fn, it)
		}
	}
}

// handOver calls the destination for it, offering to defer the outcome.
// A deferred outcome goes to the waiter goroutine, and so does a
// delivery within the call while the waiter runs, so that delivered
// dead letters are recorded (hooks, tickets) one at a time, in the order
// they were handed over; a failed call joins the failures, to be
// retried.
func (g *graph) handOver(fn func(context.Context, DeadLetter) error, it deadLetterItem) {
	q := &g.dl
	call := &q.call
	call.deferred = nil
	err := callDeadLetter(fn, call, DeadLetter{Record: it.rec, Stage: it.job.stage.name, Err: it.job.err})
	if d := call.deferred; d != nil {
		call.deferred = nil
		if err != nil {
			// The destination deferred a delivery and then failed (a
			// function wrapping a Kafka destination and another store):
			// the dead letter is delivered only if both succeeded.
			d = deferredThenFailed{d: d, err: err}
		}
		g.deferDeadLetter(it, d)
		return
	}
	q.mu.Lock()
	if err != nil {
		q.failures = append(q.failures, failedDeadLetter{it: it, err: err})
	}
	waiting := q.waiting
	q.mu.Unlock()
	switch {
	case err != nil:
	case waiting:
		g.deferDeadLetter(it, deliveredInCall{})
	default:
		g.deadLettered(it)
	}
}

// deadLettered records that it was delivered: its value's ticket
// completes with the last of its records.
func (g *graph) deadLettered(it deadLetterItem) {
	var buf [1]Ticket
	g.deadLetteredAll([]deadLetterItem{it}, buf[:0])
}

// deadLetteredAll records that items were delivered, completing the
// tickets of the values whose last record is among them in one call of
// the tracker. It returns tickets, the scratch space it used.
func (g *graph) deadLetteredAll(items []deadLetterItem, tickets []Ticket) []Ticket {
	for _, it := range items {
		g.rt.hooks.RecordDeadLettered(g.tp, it.job.stage.name)
	}
	q := &g.dl
	q.mu.Lock()
	for _, it := range items {
		if it.job.left--; it.job.left == 0 {
			tickets = append(tickets, it.job.t)
		}
	}
	q.mu.Unlock()
	if len(tickets) > 0 {
		items[0].job.stage.misused(g.tr.done(tickets...))
	}
	return tickets
}

// retryDeadLetters retries failed dead letters in offset order, each
// under Run's retry policy and waiting for its outcome. It reports
// whether they were all delivered; if not, deadLetterFailed handled the
// first that was not, and nothing more is delivered.
func (g *graph) retryDeadLetters(fn func(context.Context, DeadLetter) error, failed []failedDeadLetter) bool {
	slices.SortFunc(failed, func(a, b failedDeadLetter) int { return cmp.Compare(a.it.seq, b.it.seq) })
	for i, f := range failed {
		if err := g.redeliverDeadLetter(fn, f); err != nil {
			g.deadLetterFailed(f.it, err, failed[i+1:])
			return false
		}
		g.deadLettered(f.it)
	}
	return true
}

// redeliverDeadLetter retries f, whose first attempt failed, under Run's
// retry policy through the engine's one retry loop (never past the start
// of a revoke). The destination's ctx offers no deferral: each call
// returns the outcome.
func (g *graph) redeliverDeadLetter(fn func(context.Context, DeadLetter) error, f failedDeadLetter) error {
	dl := DeadLetter{Record: f.it.rec, Stage: f.it.job.stage.name, Err: f.it.job.err}
	r := retrier{g: g, policy: g.rt.cfg.Retry, stage: dl.Stage + " (dead letter)", log: &g.dlLog}
	err := f.err
	for attempt := 1; ; attempt++ {
		again, final := r.after(dl.Record.Offset, err, attempt)
		if !again {
			return final
		}
		if err = callDeadLetter(fn, g.ctx, dl); err == nil {
			return nil
		}
	}
}

// deadLetterFailed reports that it could not be delivered, naming it,
// the failed dead letters after it (more) and every record still queued.
// Out of a revoke or shutdown, that stops Run. During a shutdown, Run
// returns it as well (the drain interrupted the retries). During a revoke
// or a loss, it is only logged: the records stay uncommitted and the
// partition's next owner handles them.
func (g *graph) deadLetterFailed(it deadLetterItem, err error, more []failedDeadLetter) {
	q := &g.dl
	q.mu.Lock()
	q.failed = true
	left := q.dropQueued()
	q.mu.Unlock()
	g.tr.watched.Store(false)

	var offs []int64
	for _, f := range more {
		offs = append(offs, f.it.rec.Offset)
	}
	offs = append(offs, offsetsOf(left)...)
	cause := fmt.Errorf("%w: dead-letter delivery failed: %w (record was invalid: %v)", sluice.ErrNotDeadLettered, err, it.job.err)
	if len(offs) > 0 {
		cause = fmt.Errorf("%w; also not dead-lettered, left uncommitted: offsets %v", cause, offs)
	}
	se := it.job.stage.stageError([]Record{it.rec}, cause)
	switch {
	case !g.stopping():
		g.rt.fail(g, se)
	case g.rt.shuttingDown.Load() && !errors.Is(context.Cause(g.ctx), sluice.ErrLost):
		g.rt.failLate(se)
	default:
		g.rt.cfg.Logger.Warn("sluice: dead letters not delivered before the partition was taken away; they stay uncommitted",
			"topic", g.tp.Topic, "partition", g.tp.Partition, "err", se)
	}
}

// callDeadLetter calls fn once, turning a panic into a *PanicError (which
// is never retried).
func callDeadLetter(fn func(context.Context, DeadLetter) error, ctx context.Context, dl DeadLetter) (err error) {
	defer CatchPanic(&err)
	return fn(ctx, dl)
}
