package produce

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sluice-go/sluice"
)

// CloseGrace bounds each step of Close after the flush: giving up on what
// is left and waiting for the receivers to read those failed reports, then
// closing the client.
const CloseGrace = time.Second

// CloseSteps are a backend's library calls for [Tracker.Close].
type CloseSteps struct {
	// Timeout bounds Flush: the producer config's CloseTimeout.
	Timeout time.Duration
	// Flush waits up to d for every accepted message to be delivered or
	// failed; it reports whether messages were still outstanding then.
	Flush func(d time.Duration) (left bool)
	// GiveUp fails the messages still outstanding after Flush, each
	// report (for which Client.GaveUp is true) to its receiver. It may
	// wait, until ctx ends.
	GiveUp func(ctx context.Context)
	// CloseClient closes the library's client and returns once it
	// delivers no more reports. Close bounds it by CloseGrace (it keeps
	// running in the background past that).
	CloseClient func()
	// Logger receives the failures of these steps.
	Logger *slog.Logger
}

// Close runs the producer's Close once (later calls wait for the first
// and return its result): it stops every further Send, flushes for up to
// Timeout, gives up on what is left (then waits up to CloseGrace for their
// receivers), and closes the client (bounded by CloseGrace), then closes
// Gone. It returns nil, or a *sluice.CloseError counting and naming the messages
// given up on, or saying the client did not close in time; on a nil tr
// (the Close of a zero Producer value) it returns [ErrNotConstructed].
func (tr *Tracker) Close(cs CloseSteps) error {
	if tr == nil { // a zero Producer value's Close
		return ErrNotConstructed
	}
	tr.once.Do(func() { tr.closeErr = tr.close(cs) })
	return tr.closeErr
}

func (tr *Tracker) close(cs CloseSteps) error {
	tr.cancel() // a Send blocked on a full buffer returns, and releases mu
	tr.mu.Lock()
	tr.closing.Store(true) // no message is handed to the client after this
	tr.mu.Unlock()
	if tr.pending.Load() == 0 {
		tr.idleOnce.Do(func() { close(tr.idle) })
	}

	e := &sluice.CloseError{Timeout: cs.Timeout}
	if cs.Flush(cs.Timeout) {
		// Fail what is left: every report goes to its receiver, which
		// fails the value and records it in undelivered.
		ctx, cancel := context.WithTimeout(context.Background(), CloseGrace)
		cs.GiveUp(ctx)
		if !tr.awaitIdle(ctx) {
			tr.umu.Lock()
			e.Unreported = int(tr.pending.Load())
			e.Undelivered = slices.Clone(tr.undelivered)
			tr.umu.Unlock()
		}
		cancel()
	}

	// A library's close may wait for its threads, or for a receiver's
	// full channel: bound it.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		cs.CloseClient()
		tr.MarkGone()
	}()
	t := time.NewTimer(CloseGrace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		e.Client = fmt.Errorf("the client did not close within %v", CloseGrace)
	}

	if e.Unreported == 0 {
		tr.umu.Lock()
		e.Undelivered = slices.Clone(tr.undelivered)
		tr.umu.Unlock()
	}
	if e.Count() == 0 && e.Client == nil {
		return nil
	}
	cs.Logger.Warn(tr.names.Package+": closing the producer", "err", e)
	return e
}

// awaitIdle waits until ctx ends for every delivery report to be read by
// its receiver; it reports whether they were.
func (tr *Tracker) awaitIdle(ctx context.Context) bool {
	select {
	case <-tr.idle:
		return true
	case <-ctx.Done():
		return tr.pending.Load() == 0
	}
}
