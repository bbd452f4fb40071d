package franz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-go/sluice/pipeline"
)

// finalCommitRetry is how long the final commit waits before retrying
// after REBALANCE_IN_PROGRESS.
const finalCommitRetry = 100 * time.Millisecond

// stop is the shutdown sequence, run when ctx is done: drain
// (Group.Shutdown), final commit, leave the group, close the client. It
// returns the steps that did not finish.
func (r *runner) stop() error {
	offs := r.g.Shutdown()
	r.closing = true
	// Callbacks that came during the drain: a lost partition must drop
	// out of the final commit (served now, in closing mode).
	r.serveCallbacks()
	owned := r.ownedList()
	final := mergeOffsets(filterTPs(offs, owned), r.takePending(owned))
	clear(r.pending)
	began := time.Now()
	commitErr := r.commitFinal(final, began.Add(r.s.cfg.commitTimeout()))
	return errors.Join(commitErr, r.leaveAndClose(began))
}

// commitFinal commits offs synchronously (after the commit in flight),
// retrying while the coordinator answers REBALANCE_IN_PROGRESS until
// deadline. A partition revoked or lost by a callback served meanwhile is
// dropped from the retry.
func (r *runner) commitFinal(offs []pipeline.Offset, deadline time.Time) error {
	for {
		r.serveCallbacks()
		offs = filterTPs(offs, r.ownedList())
		if len(offs) == 0 {
			return nil
		}
		finished, err := r.commitSync(offs, "shutdown", deadline)
		switch {
		case !finished:
			return fmt.Errorf("franz: shutdown: the final commit of %s did not finish within Config.CloseTimeout (%v): %w",
				offsetsString(offs), r.s.cfg.closeTimeout(), err)
		case err == nil, !errors.Is(err, kerr.RebalanceInProgress) && expectedCommitError(err):
			return nil // committed, or the group moved on (logged)
		case !errors.Is(err, kerr.RebalanceInProgress):
			return fmt.Errorf("franz: shutdown: the final commit of %s failed: %w", offsetsString(offs), err)
		case time.Until(deadline) < 2*finalCommitRetry:
			return fmt.Errorf("franz: shutdown: the final commit of %s was still rejected at the end of its share of Config.CloseTimeout (%v): %w",
				offsetsString(offs), r.s.cfg.closeTimeout(), err)
		}
		t := time.NewTimer(finalCommitRetry) // the rebalance in progress completes meanwhile
		<-t.C
	}
}

// leaveAndClose leaves the group and closes the client, within
// Config.CloseTimeout counted from began: the final commit and leaving
// share the commit timeout (leaving gets at least a tenth of
// CloseTimeout), Close the rest. Nothing is owned any more afterwards.
func (r *runner) leaveAndClose(began time.Time) error {
	r.closing = true
	clear(r.owned)
	r.endHandOff() // the revoke kgo raises when leaving needs no answer
	timeout := r.s.cfg.closeTimeout()
	leaveBy := began.Add(r.s.cfg.commitTimeout())
	if least := time.Now().Add(timeout / 10); leaveBy.Before(least) {
		leaveBy = least
	}
	ctx, cancel := context.WithDeadline(context.Background(), leaveBy)
	err := r.cl.LeaveGroupContext(ctx)
	cancel()
	if err != nil {
		r.log.Warn("leaving the group did not finish in time; closing the client anyway", "err", err)
	}
	return r.closeClient(began.Add(timeout))
}

// closeClient closes the client on its own goroutine and waits for it
// until deadline (at the earliest now). Past deadline Close is left
// running: the error says so.
func (r *runner) closeClient(deadline time.Time) error {
	done := make(chan struct{})
	r.s.background.Add(1)
	go func() {
		defer r.s.background.Done()
		defer close(done)
		r.cl.Close()
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		r.log.Error("closing the client did not finish in time; it goes on in the background", "timeout", r.s.cfg.closeTimeout())
		return fmt.Errorf("franz: shutdown: closing the client did not finish within Config.CloseTimeout (%v); it goes on in the background",
			r.s.cfg.closeTimeout())
	}
}
