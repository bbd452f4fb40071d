package engine

import "context"

// A dead-letter destination that hands a dead letter to a client whose
// outcome comes later (a Kafka producer's delivery report) can return
// before the outcome, with DeferDeadLetter: the partition's dead-letter
// goroutine then goes on to the next dead letter while a waiter goroutine
// takes the outcomes, one at a time in the order the dead letters were
// handed over. Up to MaxOutstandingDeadLetters per partition are
// outstanding; a record's ticket completes once its outcome is a
// success, so the partition's commit, which only moves past finished
// records, never passes a dead letter that was not delivered.

// DeferredDeadLetter is the outcome of a dead letter that a destination
// handed over, deferred with [DeferDeadLetter].
type DeferredDeadLetter interface {
	// Ready reports whether Wait would return at once.
	Ready() bool
	// Wait blocks until the outcome is known and returns it: nil once
	// the dead letter is stored. It must return even after the call's
	// ctx ended: Run waits for it before it lets the partition go.
	Wait() error
}

// DeferDeadLetter is for dead-letter destinations (Config.DeadLetter)
// that hand a dead letter to a client whose outcome comes later. Called
// during a call of the destination with the call's ctx, after the dead
// letter was handed over, it takes d and returns true: the destination
// then returns at once, and Run takes the outcome from d later, on
// another goroutine, as the call's. A call that deferred d and then
// returns an error (a function that wraps a Kafka destination and then
// writes elsewhere) fails with that error once d succeeded: the dead
// letter counts as delivered only when d succeeded and the call returned
// nil.
// Run waits for the outcomes of one partition one at a time, in the
// order the dead letters were handed over, and hands over up to
// [MaxOutstandingDeadLetters] of them before their outcome, so the
// destination must keep the order in which it hands them over (one
// partition's calls come one at a time, in offset order).
//
// It returns false, taking nothing, when ctx is not that of such a call,
// or when Run wants the outcome from the call itself (when it retries a
// failed dead letter); the destination then waits for the outcome and
// returns it.
func DeferDeadLetter(ctx context.Context, d DeferredDeadLetter) bool {
	c, ok := ctx.Value(deadLetterCallKey{}).(*deadLetterCall)
	if !ok || c.deferred != nil || d == nil {
		return false
	}
	c.deferred = d
	return true
}

// deadLetterCall is the context of a call of the dead-letter destination
// from the partition's dead-letter goroutine: the partition's context,
// through which the destination can defer the outcome.
type deadLetterCall struct {
	context.Context
	deferred DeferredDeadLetter // set by DeferDeadLetter during the call
}

// deadLetterCallKey is the context key deadLetterCall answers with itself.
type deadLetterCallKey struct{}

// Value returns the call itself for deadLetterCallKey, what the partition's
// context holds otherwise.
func (c *deadLetterCall) Value(key any) any {
	if key == (deadLetterCallKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// deferredWait is a dead letter whose outcome is deferred.
type deferredWait struct {
	it deadLetterItem
	d  DeferredDeadLetter
}

// deferDeadLetter queues the outcome of it for the waiter goroutine,
// starting one if none runs.
func (g *graph) deferDeadLetter(it deadLetterItem, d DeferredDeadLetter) {
	q := &g.dl
	q.mu.Lock()
	q.waits.push(deferredWait{it: it, d: d})
	q.outstanding++
	start := !q.waiting
	if start {
		q.waiting = true
		q.waiters.Add(1)
	}
	q.mu.Unlock()
	if start {
		go g.awaitDeadLetters()
	}
}

// maxDeadLetterBatch caps the delivered dead letters the waiter records
// at once.
const maxDeadLetterBatch = 256

// awaitDeadLetters is the waiter goroutine: it takes the queued outcomes
// in order until none is left. Each outcome known frees its place among
// the outstanding ones at once; the delivered dead letters are recorded
// in batches (deadLetteredAll: one lock of the tracker for all), each
// before the waiter blocks on an outcome that is not ready, so a
// delivered record is never held back by a later dead letter. A failed
// one joins the failures, which the dead-letter goroutine retries once
// no outcome is outstanding and the waiter is done.
func (g *graph) awaitDeadLetters() {
	q := &g.dl
	defer q.waiters.Done()
	var delivered []deadLetterItem
	var tickets []Ticket
	for {
		q.mu.Lock()
		w, ok := q.waits.pop()
		if !ok && len(delivered) == 0 {
			q.waiting = false
			q.mu.Unlock()
			q.signal() // failures wait for the waiter to be done
			return
		}
		q.mu.Unlock()
		if len(delivered) > 0 && (!ok || len(delivered) >= maxDeadLetterBatch || !w.d.Ready()) {
			tickets = g.deadLetteredAll(delivered, tickets[:0])
			clear(delivered)
			delivered = delivered[:0]
		}
		if !ok {
			continue
		}
		err := callWait(w.d)
		q.mu.Lock()
		q.outstanding--
		if err != nil {
			q.failures = append(q.failures, failedDeadLetter{it: w.it, err: err})
		}
		q.mu.Unlock()
		q.signal()
		if err == nil {
			delivered = append(delivered, w.it)
		}
	}
}

// deferredThenFailed is the outcome of a call that deferred d and then
// returned err: d's error if d failed, else err.
type deferredThenFailed struct {
	d   DeferredDeadLetter
	err error
}

func (f deferredThenFailed) Ready() bool { return f.d.Ready() }

func (f deferredThenFailed) Wait() error {
	if err := callWait(f.d); err != nil {
		return err
	}
	return f.err
}

// deliveredInCall is the outcome of a dead letter the destination
// delivered within its call.
type deliveredInCall struct{}

func (deliveredInCall) Ready() bool { return true }
func (deliveredInCall) Wait() error { return nil }

// callWait waits for d's outcome, turning a panic into a *PanicError.
func callWait(d DeferredDeadLetter) (err error) {
	defer CatchPanic(&err)
	return d.Wait()
}
