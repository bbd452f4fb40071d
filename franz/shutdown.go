package franz

import (
	"context"
	"time"
)

// The shutdown sequence is rebalance.Core.Stop: drain, final commit,
// then Leave and Close below, each bounded by Config.CloseTimeout.

// BeforeFinalCommit serves the callbacks that came during the drain or a
// retry wait: a partition revoked or lost must drop out of the final
// commit (served in closing mode).
func (r *runner) BeforeFinalCommit(time.Time) { r.serveCallbacks() }

// WaitToRetryCommit waits d: the rebalance in progress completes
// meanwhile (kgo serves the group on its own goroutines).
func (r *runner) WaitToRetryCommit(d time.Duration) {
	t := time.NewTimer(d)
	<-t.C
}

// Leave makes later callbacks return at once (the revoke kgo raises when
// leaving needs no answer), keeps a purge that has not yet checked it
// from adding its topic back (group_purge.go), and leaves the group, until
// deadline. A leave that did not finish is logged: Close does the rest.
func (r *runner) Leave(deadline time.Time) error {
	r.leaving.Store(true)
	r.endHandOff()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	err := r.cl.LeaveGroupContext(ctx)
	cancel()
	if err != nil {
		r.log.Warn("leaving the group did not finish in time; closing the client anyway", "err", err)
	}
	return nil
}

// Close closes the client on its own goroutine and waits for it until
// deadline (at the earliest now), then for the purges still running
// (group_purge.go), which the closed client ends at once. Past deadline
// Close is left running, and so are the purges: the error says so.
func (r *runner) Close(deadline time.Time) error {
	finished, err := r.core.CloseClient(deadline, func() error {
		r.cl.Close()
		return nil
	})
	if finished {
		r.awaitPurges()
	}
	return err
}
