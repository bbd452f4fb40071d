package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrNotDeadLettered is wrapped by the error that stops [Run] when records
// found invalid could not be handed to the dead-letter destination: the
// function set with pipeline.WithDeadLetter kept failing, panicked, or Run shut
// down while it was still failing. The error is a *StageError naming the
// first such record; those records stay uncommitted, so whoever owns the
// partition next processes them again.
var ErrNotDeadLettered = errors.New("records not dead-lettered")

// DeadLetter is one record found invalid, as handed to the function set
// with pipeline.WithDeadLetter (Config.DeadLetter).
type DeadLetter struct {
	Record Record // the original record, untouched
	Stage  string // the stage that reported it
	Err    error  // the error passed to Invalid
}

// deadLetterJob is one value found invalid: its ticket completes once
// every record claimed for it was delivered.
type deadLetterJob struct {
	stage *Stage
	t     Ticket
	err   error
	left  int // records not delivered yet; dead-letter goroutine only
}

// deadLetterItem is one record waiting for the dead-letter destination.
type deadLetterItem struct {
	claimed
	job *deadLetterJob
}

// deadLetters is a partition's queue of records for the dead-letter
// destination, in offset order. It is unbounded, so the stage that found
// a record invalid never waits; every entry is a record in flight, so the
// in-flight budget bounds it.
type deadLetters struct {
	mu      sync.Mutex
	pending []deadLetterItem // by sequence number
	closed  bool             // every stage exited: nothing more is queued
	failed  bool             // a delivery failed: nothing more is delivered
	wake    chan struct{}    // capacity one: pending, closed or the tracker changed
}

func (q *deadLetters) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// deadLetter queues the records behind t that are not queued yet for the
// partition's dead-letter goroutine, so the stage goes on while they are
// delivered; t completes once they all were. It returns false when the
// graph already exited (a shared batch can fail values of a partition
// that is gone); t is then left as it is.
func (g *graph) deadLetter(s *Stage, t Ticket, err error) bool {
	q := &g.dl
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	recs := g.tr.claimInvalid(nil, t)
	if q.failed || len(recs) == 0 {
		q.mu.Unlock()
		if !q.failed {
			// Each record behind t is queued by an earlier value, whose
			// ticket holds it until its dead letter was delivered.
			s.misused(g.tr.done(t))
		}
		return true
	}
	job := &deadLetterJob{stage: s, t: t, err: err, left: len(recs)}
	for _, c := range recs {
		i, _ := slices.BinarySearchFunc(q.pending, c.seq, func(it deadLetterItem, seq uint64) int { return cmp.Compare(it.seq, seq) })
		q.pending = slices.Insert(q.pending, i, deadLetterItem{claimed: c, job: job})
	}
	g.tr.watched.Store(true)
	q.mu.Unlock()
	q.signal()
	return true
}

// closeDeadLetters tells the dead-letter goroutine that nothing more will
// be queued (every stage exited).
func (g *graph) closeDeadLetters() {
	g.dl.mu.Lock()
	g.dl.closed = true
	g.dl.mu.Unlock()
	g.dl.signal()
}

// nextDeadLetter waits for the first queued record to be deliverable:
// every record before it finished or was queued itself, so that none can
// still be found invalid and dead letters leave in offset order. It
// returns false once the queue is closed and its first record can never
// become deliverable (a record before it will never finish); what is left
// then stays uncommitted, as the record blocking it does.
func (g *graph) nextDeadLetter() (deadLetterItem, bool) {
	q := &g.dl
	for {
		q.mu.Lock()
		if len(q.pending) > 0 && g.tr.settledBefore(q.pending[0].seq) {
			it := q.pending[0]
			q.pending = slices.Delete(q.pending, 0, 1)
			if len(q.pending) == 0 {
				g.tr.watched.Store(false)
			}
			q.mu.Unlock()
			return it, true
		}
		if q.closed {
			left := q.pending
			q.pending = nil
			q.mu.Unlock()
			if len(left) > 0 {
				g.rt.cfg.Logger.Warn("sluice: dead letters left undelivered because a record before them never finished; they stay uncommitted",
					"topic", g.tp.Topic, "partition", g.tp.Partition, "offsets", offsetsOf(left))
			}
			return deadLetterItem{}, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// sendDeadLetters delivers queued dead letters one at a time, in offset
// order, until the queue is closed (after every stage exited) and
// drained. After a delivery failure, nothing more is delivered or
// completed.
func (g *graph) sendDeadLetters() {
	fn := g.rt.cfg.DeadLetter
	for {
		it, ok := g.nextDeadLetter()
		if !ok {
			return
		}
		if err := g.deliverDeadLetter(fn, DeadLetter{Record: it.rec, Stage: it.job.stage.name, Err: it.job.err}); err != nil {
			g.deadLetterFailed(it, err)
			return
		}
		g.rt.hooks.RecordDeadLettered(g.tp, it.job.stage.name)
		if it.job.left--; it.job.left == 0 {
			it.job.stage.misused(g.tr.done(it.job.t))
		}
	}
}

// deadLetterFailed reports that it could not be delivered, naming it and
// every record still queued after it. Out of a revoke or shutdown, that
// stops Run. During a shutdown, Run returns it as well (the drain
// interrupted the retries). During a revoke or a loss, it is only logged:
// the records stay uncommitted and the partition's next owner handles
// them.
func (g *graph) deadLetterFailed(it deadLetterItem, err error) {
	q := &g.dl
	q.mu.Lock()
	q.failed = true
	left := q.pending
	q.pending = nil
	q.mu.Unlock()
	g.tr.watched.Store(false)

	cause := fmt.Errorf("%w: dead-letter delivery failed: %w (record was invalid: %v)", ErrNotDeadLettered, err, it.job.err)
	if len(left) > 0 {
		cause = fmt.Errorf("%w; also not dead-lettered, left uncommitted: offsets %v", cause, offsetsOf(left))
	}
	se := it.job.stage.stageError([]Record{it.rec}, cause)
	switch {
	case !g.stopping():
		g.rt.fail(g, se)
	case g.rt.shuttingDown.Load() && !errors.Is(context.Cause(g.ctx), ErrLost):
		g.rt.failLate(se)
	default:
		g.rt.cfg.Logger.Warn("sluice: dead letters not delivered before the partition was taken away; they stay uncommitted",
			"topic", g.tp.Topic, "partition", g.tp.Partition, "err", se)
	}
}

// offsetsOf returns the offsets of queued dead letters, for messages.
func offsetsOf(items []deadLetterItem) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.rec.Offset
	}
	return out
}

// deliverDeadLetter calls fn, retrying transient failures under Run's
// retry policy through the engine's one retry loop (never past the start
// of a revoke).
func (g *graph) deliverDeadLetter(fn func(context.Context, DeadLetter) error, dl DeadLetter) error {
	r := retrier{g: g, policy: g.rt.cfg.Retry, stage: dl.Stage + " (dead letter)", log: &g.dlLog}
	for attempt := 1; ; attempt++ {
		err := callDeadLetter(fn, g.ctx, dl)
		if err == nil {
			return nil
		}
		again, err := r.after(dl.Record.Offset, err, attempt)
		if !again {
			return err
		}
	}
}

// callDeadLetter calls fn once, turning a panic into a *PanicError (which
// is never retried).
func callDeadLetter(fn func(context.Context, DeadLetter) error, ctx context.Context, dl DeadLetter) (err error) {
	defer CatchPanic(&err)
	return fn(ctx, dl)
}
