package franz

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxDeadlineStep caps deadlineStep: how much later than its delivery
// timeout a message may fail.
const maxDeadlineStep = 100 * time.Millisecond

// deadlineStep is the window of send times that share one produce
// context: a 16th of the delivery timeout, at most maxDeadlineStep.
func deadlineStep(delivery time.Duration) time.Duration {
	return max(min(delivery/16, maxDeadlineStep), time.Microsecond)
}

// deadlines hands out the produce contexts of a [Producer]'s records
// (ProducerConfig.DeliveryTimeout). A context per record cost a timer, two
// allocations and a lock of the parent on every produce and on every
// report (a sixth of the CPU of consume → produce on the embedded
// broker); instead the messages sent within one window of deadlineStep
// share a context that ends a delivery timeout after the window's end, so
// a message fails once its delivery timeout passed, at most deadlineStep
// later, never sooner. Every context is a child of the producer's give-up
// context (Close cancels it). The zero value is ready; it is safe for
// concurrent use.
type deadlines struct {
	cur atomic.Pointer[deadlineWindow] // the window of the latest sends
	mu  sync.Mutex                     // serialises opening windows
	// open are the cancel functions of the windows whose context may not
	// have ended yet, oldest first; each is called once its deadline
	// passed (its timer already ended it: the call only releases it).
	open []deadlineWindow
}

// deadlineWindow is the context of the sends before until.
type deadlineWindow struct {
	ctx      context.Context
	cancel   context.CancelFunc
	until    time.Time // sends before it use ctx
	deadline time.Time // ctx's deadline: until + the delivery timeout
}

// context returns the produce context of a message sent at now: one
// ending at least delivery after now, and at most delivery +
// deadlineStep(delivery) after it; parent ends it sooner.
func (d *deadlines) context(parent context.Context, delivery time.Duration, now time.Time) context.Context {
	if w := d.cur.Load(); w != nil && now.Before(w.until) && !now.Before(w.until.Add(-deadlineStep(delivery))) {
		return w.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.cur.Load(); w != nil && now.Before(w.until) && !now.Before(w.until.Add(-deadlineStep(delivery))) {
		return w.ctx // another sender opened it meanwhile
	}
	d.release(now)
	until := now.Add(deadlineStep(delivery))
	w := deadlineWindow{until: until, deadline: until.Add(delivery)}
	w.ctx, w.cancel = context.WithDeadline(parent, w.deadline)
	d.open = append(d.open, w)
	d.cur.Store(&w)
	return w.ctx
}

// release calls the cancel functions of the windows whose deadline
// passed. d.mu is held.
func (d *deadlines) release(now time.Time) {
	n := 0
	for n < len(d.open) && !now.Before(d.open[n].deadline) {
		d.open[n].cancel()
		n++
	}
	if n > 0 {
		d.open = append(d.open[:0], d.open[n:]...)
	}
}
