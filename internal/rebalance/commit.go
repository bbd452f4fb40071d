package rebalance

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// commitRequest is one Backend.Commit call the core made; c.inflight
// holds it until its outcome was handled on the poll goroutine.
type commitRequest struct {
	offs  []sluice.Offset
	owner map[sluice.TopicPartition]uint64 // the ownership each offset belongs to
	why   string                           // "interval", "revoke", "shutdown"
	began time.Time
	done  chan commitOutcome // buffered: the call's goroutine never blocks
	// abandoned: a synchronous caller stopped waiting and reported the
	// commit as failed; its outcome is only logged.
	abandoned bool
}

type commitOutcome struct {
	rejected []Rejected
	err      error
	took     time.Duration
}

// collect adds offsets reported by Group.Offsets to pending, fenced to
// owned partitions.
func (c *Core) collect(offs []sluice.Offset) {
	for _, o := range offs {
		if !c.owned[o.TopicPartition] {
			c.log.Debug("fenced offset of unowned partition", slog.String("topic", o.Topic), slog.Int("partition", int(o.Partition)), slog.Int64("next", o.Next))
			continue
		}
		if o.Next >= 0 {
			c.pending[o.TopicPartition] = o.Next // the runtime reports offsets moving forward only
		}
	}
}

// commitPending starts the background commit of pending when an interval
// asked for one and no commit is in flight.
func (c *Core) commitPending() {
	if !c.commitDue || c.inflight != nil || c.closing {
		return
	}
	c.commitDue = false
	offs := c.takePending(c.OwnedList())
	clear(c.pending) // what was left is not owned: never sent
	if len(offs) > 0 {
		c.send(offs, "interval")
	}
}

// takePending removes the pending offsets of tps and returns them.
func (c *Core) takePending(tps []sluice.TopicPartition) []sluice.Offset {
	var out []sluice.Offset
	for _, tp := range tps {
		if next, ok := c.pending[tp]; ok {
			out = append(out, sluice.Offset{TopicPartition: tp, Next: next})
			delete(c.pending, tp)
		}
	}
	return out
}

// send starts Backend.Commit of offs on its own goroutine and makes it
// the commit in flight. The caller made sure none was.
func (c *Core) send(offs []sluice.Offset, why string) *commitRequest {
	req := &commitRequest{
		offs:  offs,
		owner: make(map[sluice.TopicPartition]uint64, len(offs)),
		why:   why,
		began: time.Now(),
		done:  make(chan commitOutcome, 1),
	}
	for _, o := range offs {
		req.owner[o.TopicPartition] = c.ownership[o.TopicPartition]
	}
	b := c.b
	c.o.Background.Add(1)
	go func() {
		defer c.o.Background.Done()
		began := time.Now()
		rejected, err := b.Commit(offs)
		req.done <- commitOutcome{rejected: rejected, err: err, took: time.Since(began)}
	}()
	c.inflight = req
	return req
}

// reap handles the outcome of the commit in flight if it came.
func (c *Core) reap() {
	if c.inflight == nil {
		return
	}
	select {
	case out := <-c.inflight.done:
		c.finish(c.inflight, out)
	default:
	}
}

// await waits until deadline for the commit in flight, handling its
// outcome. It reports whether no commit is in flight any more.
func (c *Core) await(deadline time.Time) bool {
	if c.inflight == nil {
		return true
	}
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case out := <-c.inflight.done:
		c.finish(c.inflight, out)
		return true
	case <-t.C:
		return false
	}
}

// finish handles the outcome of req, which is no longer in flight, and
// returns its error (a request-level one, or one naming the partitions
// that failed). A failed background commit puts the offsets that failed
// back into pending.
func (c *Core) finish(req *commitRequest, out commitOutcome) error {
	c.inflight = nil
	failed, err := commitFailures(req.offs, out)
	if req.abandoned {
		c.log.Info("an abandoned commit finished", "why", req.why, "offsets", req.offs, "took", out.took.String(), "err", err)
		return err
	}
	c.report(req.why, req.offs, out.took, err)
	if req.why != "interval" {
		return err
	}
	for _, o := range failed {
		_, newer := c.pending[o.TopicPartition]
		if c.owned[o.TopicPartition] && c.ownership[o.TopicPartition] == req.owner[o.TopicPartition] && !newer {
			c.pending[o.TopicPartition] = o.Next // retried at the next interval
		}
	}
	return err
}

// commitFailures returns the offsets of offs that out did not commit and
// the error to report.
func commitFailures(offs []sluice.Offset, out commitOutcome) ([]sluice.Offset, error) {
	if out.err != nil {
		return offs, out.err
	}
	if len(out.rejected) == 0 {
		return nil, nil
	}
	failed := make([]sluice.Offset, len(out.rejected))
	for i, r := range out.rejected {
		failed[i] = r.Offset
	}
	return failed, fmt.Errorf("partitions %s not committed: %w", engine.OffsetsString(failed), out.rejected[0].Err)
}

// report tells the group the outcome of a commit and logs it: a failure
// at debug level when it is expected around rebalances, else as a
// warning.
func (c *Core) report(why string, offs []sluice.Offset, took time.Duration, err error) {
	if err == nil {
		c.g.Committed(offs, took, nil)
		c.log.Debug("offsets committed", "why", why, "offsets", offs, "took", took.String())
		return
	}
	c.g.Committed(offs, took, &sluice.CommitError{Reason: why, Offsets: offs, Err: err})
	if c.b.ExpectedCommitError(err) {
		// Another member owns the partition now or will commit after
		// the rebalance.
		c.log.Debug("commit rejected during rebalance", "why", why, "err", err, "offsets", offs)
		return
	}
	c.log.Warn("commit failed", "why", why, "err", err, "offsets", offs)
}

// errNotSent is what commitSync's error wraps when it sent nothing: the
// commit in flight was not answered by the deadline.
var errNotSent = errors.New("not sent")

// commitSync commits offs (callers fence them themselves) once the commit
// in flight, if any, was answered, waiting for both until deadline. Past
// deadline a commit that was sent is abandoned (it stays in flight until
// the client answers); one that could not be sent is not sent. finished
// reports whether the commit was sent and answered in time; err is its
// error, or why it did not finish.
func (c *Core) commitSync(offs []sluice.Offset, why string, deadline time.Time) (finished bool, err error) {
	offs = validOffsets(offs)
	if len(offs) == 0 {
		return true, nil
	}
	began := time.Now()
	if !c.await(deadline) {
		prev := c.inflight
		err = fmt.Errorf("%w: the earlier %s commit of %s was still unanswered after %v",
			errNotSent, prev.why, engine.OffsetsString(prev.offs), time.Since(prev.began).Round(time.Millisecond))
		c.log.Warn("commit not sent in time", "why", why, "offsets", offs, "err", err)
		c.g.Committed(offs, time.Since(began), &sluice.CommitError{Reason: why, Offsets: offs, Err: err})
		return false, err
	}
	req := c.send(offs, why)
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case out := <-req.done:
		return true, c.finish(req, out)
	case <-t.C:
		req.abandoned = true
		err = fmt.Errorf("commit did not finish after %v", time.Since(req.began).Round(time.Millisecond))
		c.log.Warn("commit did not finish in time; it goes on in the background", "why", why, "offsets", offs, "err", err)
		c.g.Committed(offs, time.Since(began), &sluice.CommitError{Reason: why, Offsets: offs, Err: err})
		return false, err
	}
}

// awaitLost waits, bounded by the commit timeout, for the commit in
// flight when it holds one of the lost partitions tps, so that it cannot
// land after the next owner's commits (see "Offsets flow").
func (c *Core) awaitLost(tps []sluice.TopicPartition) {
	if c.inflight == nil || len(filterTPs(c.inflight.offs, tps)) == 0 {
		return
	}
	prev := c.inflight
	if !c.await(time.Now().Add(c.commitTimeout())) {
		c.log.Warn("the commit in flight of lost partitions did not finish in time; it may still land after the next owner's",
			"why", prev.why, "offsets", prev.offs, "lost", tps, "timeout", c.commitTimeout().String())
	}
}
