package testkit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// Running is one pipeline.Run started in the background by [Start], for
// tests that bring their own source (the Kafka source on an embedded
// broker, say).
type Running struct {
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	timeout time.Duration
	checked atomic.Bool // the test asked for Run's error (Err after Done, Wait, Stop)
}

// Start runs pipeline.Run(src, build, opts...) in a goroutine. Run is
// cancelled and waited for at test cleanup, so nothing outlives the test.
// An error Run returned is never lost: if the test did not look at it
// (through Stop, Wait, or Err once Done is closed), the cleanup reports it
// with t.Error, so a test that forgot to check cannot pass over a failed
// stage or an undelivered dead letter.
func Start(t testing.TB, src sluice.Source, build pipeline.Builder, opts ...pipeline.Option) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan struct{}), timeout: WaitTimeout}
	go func() {
		defer close(r.done)
		r.err = pipeline.Run(ctx, src, build, opts...)
	}()
	t.Cleanup(func() {
		r.stop()
		if r.err != nil && !r.checked.Load() {
			t.Errorf("testkit: at cleanup, pipeline.Run had returned an error the test never checked "+
				"(call Stop or Wait and check what they return): %v", r.err)
		}
	})
	return r
}

// Done is closed when Run has returned.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err returns Run's error once Done is closed, nil before.
func (r *Running) Err() error {
	select {
	case <-r.done:
		r.checked.Store(true)
		return r.err
	default:
		return nil
	}
}

// Wait blocks until Run returns by itself (a stage failed) and returns its
// error; it fails the test after WaitTimeout.
func (r *Running) Wait(t testing.TB) error {
	t.Helper()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case <-r.done:
		r.checked.Store(true)
		return r.err
	case <-timer.C:
		t.Fatalf("testkit: Run still running after %v", r.timeout)
		return nil
	}
}

// Stop cancels Run (a graceful shutdown) and returns its error: the error
// that stopped it, and what the shutdown itself reported, such as records
// whose dead-letter deliveries were still failing (sluice.ErrNotDeadLettered).
// It fails the test if Run does not return within WaitTimeout. It is
// idempotent.
func (r *Running) Stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	return r.Wait(t)
}

// stop cancels Run and waits for it, without a time limit (for cleanup
// and the Harness's Stop).
func (r *Running) stop() {
	r.cancel()
	<-r.done
}

// WaitUntil calls cond every 10 ms until it returns true. It fails the
// test if Run returns first (cond is checked once more then) or after
// WaitTimeout; what names the condition in the failure. It is for state
// outside the process's control, such as a broker's committed offsets.
func (r *Running) WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(r.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-r.done:
			if !cond() {
				t.Fatalf("testkit: Run returned %v while waiting for %s", r.err, what)
			}
			return
		case <-deadline.C:
			t.Fatalf("testkit: %s: not reached after %v", what, r.timeout)
		}
	}
}
