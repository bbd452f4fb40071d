package rebalance

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// FinalCommitRetry is how long the final commit waits
// (Backend.WaitToRetryCommit) before retrying after REBALANCE_IN_PROGRESS.
const FinalCommitRetry = 100 * time.Millisecond

// Stop is the shutdown sequence Run runs when ctx is done: deliver the
// batch being built, drain (Group.Shutdown), the final commit (after the
// commit in flight, so that it is the last one sent), leave the group and
// close the client (LeaveAndClose). It returns the steps that did not
// finish, joined.
func (c *Core) Stop() error {
	c.Flush()
	offs := c.g.Shutdown()
	c.closing = true
	clear(c.paused)
	c.dropAllHeld() // never delivered, so never committed
	owned := c.OwnedList()
	final := mergeOffsets(filterTPs(offs, owned), c.takePending(owned))
	clear(c.pending)
	began := time.Now()
	deadline := began.Add(c.commitTimeout())
	c.final, c.finalBy = final, deadline
	retryErr := c.commitFinal(deadline)
	commitErr := errors.Join(c.finalErr, retryErr)
	c.final = nil
	return errors.Join(commitErr, c.LeaveAndClose(began))
}

// FinalCommitRefused is the warning logged when the group refuses the
// final commit because its membership moved on or the topic was deleted
// (Backend.ExpectedCommitError, REBALANCE_IN_PROGRESS included once the
// retries ran out of time). That
// is no error: no record is lost, the partitions' next owners start from
// the previous commit and process the records after it again. The
// exactly-once Group treats a refused final transaction the same way.
const FinalCommitRefused = "the group refused the final commit (its membership moved on, or the topic was deleted); " +
	"no record is lost: the partitions' next owners process the records after the previous commit again (duplicates)"

// commitFinal commits c.final synchronously, retrying while the coordinator
// answers REBALANCE_IN_PROGRESS (a commit sent between a JoinGroup and its
// SyncGroup) until deadline, and letting the backend serve the client
// meanwhile so that the rebalance can complete. A revoke served
// meanwhile commits the final offsets of every partition still owned
// (revokeWhileStopping; once that succeeded nothing is left to send), a
// partition lost meanwhile is not committed at all: either way a
// partition no longer owned drops out of the retry. A
// refusal because the group moved on, also a REBALANCE_IN_PROGRESS still
// answered when the deadline nears, is logged as a warning
// (FinalCommitRefused) and is no error, and so is a retry of such a
// refusal, sent, that the deadline cuts short: the group refused the
// commits before it, and whether it lands or not, no record is lost (a
// retry not sent because another commit, a revoke's, was still unanswered
// stays an error: nothing says that one was refused).
// Any other error wraps the last commit error.
func (c *Core) commitFinal(deadline time.Time) error {
	var refused error // the last refusal retried, if any
	for {
		c.b.BeforeFinalCommit(deadline)
		offs := filterTPs(c.final, c.OwnedList())
		if len(offs) == 0 {
			return nil
		}
		finished, err := c.commitSync(offs, "shutdown", deadline)
		retriable := err != nil && c.b.RetriableCommitError(err)
		switch {
		case !finished && refused != nil && !errors.Is(err, errNotSent):
			c.log.Warn(FinalCommitRefused, "offsets", offs, "err", refused, "retry", err)
			return nil
		case !finished:
			return c.finalCommitError(offs, "", false, err)
		case err == nil:
			return nil
		case c.b.ExpectedCommitError(err) && (!retriable || time.Until(deadline) < 2*FinalCommitRetry):
			c.log.Warn(FinalCommitRefused, "offsets", offs, "err", err)
			return nil
		case !retriable:
			return c.finalCommitError(offs, "", true, err)
		}
		if c.b.ExpectedCommitError(err) {
			refused = err
		}
		c.b.WaitToRetryCommit(FinalCommitRetry)
	}
}

// finalCommitError is the error Stop returns for a final commit of offs
// that did not finish by the deadline (finished false) or failed with err.
// sent, empty or starting with ", ", says which commit it was when it was
// not the final commit's own.
func (c *Core) finalCommitError(offs []sluice.Offset, sent string, finished bool, err error) error {
	what := "the final commit of " + engine.OffsetsString(offs) + sent
	if !finished {
		return fmt.Errorf("%s: shutdown: %s did not finish within Config.CloseTimeout (%v): %w",
			c.o.Prefix, what, c.closeTimeout(), err)
	}
	return fmt.Errorf("%s: shutdown: %s failed: %w", c.o.Prefix, what, err)
}

// LeaveAndClose leaves the group (Backend.Leave) and closes the client
// (Backend.Close), within CloseTimeout counted from began: the final
// commit and leaving share the commit timeout, but leaving gets at least
// a tenth of CloseTimeout; Close the rest. Nothing is owned any more
// afterwards. Backends call it from Fail; Stop calls it.
func (c *Core) LeaveAndClose(began time.Time) error {
	c.closing = true
	clear(c.owned)
	timeout := c.closeTimeout()
	leaveBy := began.Add(c.commitTimeout())
	if least := time.Now().Add(timeout / 10); leaveBy.Before(least) {
		leaveBy = least
	}
	if err := c.b.Leave(leaveBy); err != nil {
		return err
	}
	return c.b.Close(began.Add(timeout))
}

// CloseClient runs closeFn (the client's Close) on its own goroutine,
// counted in Options.Background, and waits for it until deadline (at the
// earliest now). It reports whether closeFn returned in time; a close
// error is logged, not returned. Past deadline closeFn is left running
// and err says so, naming Config.CloseTimeout.
func (c *Core) CloseClient(deadline time.Time, closeFn func() error) (finished bool, err error) {
	began := time.Now()
	done := make(chan error, 1)
	c.o.Background.Add(1)
	go func() {
		defer c.o.Background.Done()
		done <- closeFn()
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			c.log.Warn("close failed", "err", err)
		}
		c.log.Debug("client closed", "took", time.Since(began).String())
		return true, nil
	case <-t.C:
		c.log.Error("closing the client did not finish in time; it goes on in the background",
			"timeout", c.closeTimeout().String())
		return false, fmt.Errorf("%s: shutdown: closing the client did not finish within Config.CloseTimeout (%v); it goes on in the background",
			c.o.Prefix, c.closeTimeout())
	}
}
