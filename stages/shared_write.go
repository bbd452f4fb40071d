package stages

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// writeQueue waits for s's turn, then writes the queued batches in order
// until the queue is empty, completing their values in their partitions.
// It returns false when s must stop: a write failed for good and s had
// values in its batch (the failure is then already reported, see fail).
// A write interrupted because s's partition is being revoked (its retries
// end; a panic or a permanent error is still a failure) or is gone puts
// the batch back at the head of the queue and ends s's turn.
func (b *SharedBatcher[T]) writeQueue(s *stagekit.Stage) bool {
	b.mu.Lock()
	b.writers++
	b.mu.Unlock()
	defer b.quit()
	if b.writing.Acquire(s.Context(), 1) != nil {
		return true // s's partition was lost or its drain timed out meanwhile
	}
	defer b.writing.Release(1)
	for {
		p := b.next()
		if p == nil {
			return true
		}
		interrupted, err := b.writeBatch(s, p)
		switch {
		case err == nil:
			b.complete(p.owners, func(o *stagekit.Stage, ts []stagekit.Ticket) { o.Done(ts...) })
		case sluice.IsInvalid(err):
			b.complete(p.owners, func(o *stagekit.Stage, ts []stagekit.Ticket) {
				for _, t := range ts {
					if ferr := o.Fail(t, err); ferr != nil { // no dead-letter destination
						o.Abort(ferr)
					}
				}
			})
		case interrupted || (s.Stopping() && transient(err)):
			b.requeue(p)
			if s.Stopping() {
				return true
			}
		default:
			if b.fail(s, p, err) {
				return false
			}
		}
	}
}

// transient reports whether a write error is worth trying again on
// another partition: not a panic nor an error marked permanent.
func transient(err error) bool {
	var pe *sluice.PanicError
	return !sluice.IsPermanent(err) && !errors.As(err, &pe)
}

// next takes the batch at the head of the queue, or returns nil.
func (b *SharedBatcher[T]) next() *pending[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		return nil
	}
	p := b.queue[0]
	b.queue[0] = nil
	b.queue = b.queue[1:]
	return p
}

// quit ends a writeQueue. The last writer to quit with batches still
// queued (its partition is being revoked or is gone) tells the other
// Feed stages, so that they are written even if no value arrives.
func (b *SharedBatcher[T]) quit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writers--
	if b.writers == 0 && len(b.queue) > 0 {
		close(b.orphaned)
		b.orphaned = make(chan struct{})
	}
}

// writeBatch calls write for p as s's stage function (see invoke: panics
// become errors, calls are timed, retried under s's policy and watched by
// the stuck detector). It reports
// whether the write was interrupted: its context ended (see writeContext).
func (b *SharedBatcher[T]) writeBatch(s *stagekit.Stage, p *pending[T]) (interrupted bool, err error) {
	ctx, done := writeContext(s, p.owners)
	defer done()
	pr, t := b.probeFor(s, p.owners)
	_, err = stagekit.Call(ctx, s, pr, stagekit.Item[[]T]{Value: p.vals, Ticket: t}, b.call)
	return ctx.Err() != nil, err
}

// probeFor returns the probe and ticket the stuck detector watches a write
// under: those of the batch's first value whose partition still feeds the
// batcher (s may be writing other partitions' values), else s's own probe
// with no value.
func (b *SharedBatcher[T]) probeFor(s *stagekit.Stage, owners []entry) (*stagekit.Probe, stagekit.Ticket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range owners {
		if f := b.feeds[e.s]; f != nil {
			return f.probe, e.t
		}
	}
	return b.feeds[s].probe, stagekit.Ticket{}
}

// fail reports a write's fatal error (a permanent error, retries used up,
// a panic) to every partition with values in p, each naming its first
// value, in batch order: Run returns the error of the batch's first value.
// It reports whether s was one of them.
func (b *SharedBatcher[T]) fail(s *stagekit.Stage, p *pending[T], err error) (own bool) {
	err = fmt.Errorf("shared batch of %d values: %w", len(p.vals), err)
	b.complete(p.owners, func(o *stagekit.Stage, ts []stagekit.Ticket) {
		o.Abort(o.Fail(ts[0], err))
		own = own || o == s
	})
	return own
}

// complete calls fn with each owner's tickets, then settles the owners.
func (b *SharedBatcher[T]) complete(owners []entry, fn func(*stagekit.Stage, []stagekit.Ticket)) {
	byOwner := map[*stagekit.Stage][]stagekit.Ticket{}
	var order []*stagekit.Stage
	for _, e := range owners {
		if _, ok := byOwner[e.s]; !ok {
			order = append(order, e.s)
		}
		byOwner[e.s] = append(byOwner[e.s], e.t)
	}
	for _, o := range order {
		fn(o, byOwner[o])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, o := range order {
		b.release(o, len(byOwner[o]))
	}
}

// release marks n values of o as no longer pending. Callers hold b.mu.
func (b *SharedBatcher[T]) release(o *stagekit.Stage, n int) {
	f := b.feeds[o]
	if f == nil {
		return
	}
	f.pending -= n
	if f.pending == 0 && f.settled != nil {
		close(f.settled)
		f.settled = nil
	}
}

// requeue puts the values of p whose partitions are not stopping back at
// the head of the queue, ahead of every batch closed after p, so that each
// partition's values are still written in offset order; the values of
// stopping partitions are released uncommitted. Only the writer holding
// the turn calls it.
func (b *SharedBatcher[T]) requeue(p *pending[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	back := &pending[T]{}
	for i, e := range p.owners {
		if e.s.Stopping() {
			b.release(e.s, 1)
			continue
		}
		back.vals = append(back.vals, p.vals[i])
		back.owners = append(back.owners, e)
	}
	if len(back.vals) > 0 {
		b.queue = append([]*pending[T]{back}, b.queue...)
	}
}

// settle waits until every value s added was written (or ctx ends).
func (b *SharedBatcher[T]) settle(ctx context.Context, s *stagekit.Stage) {
	b.mu.Lock()
	f := b.feeds[s]
	if f.pending == 0 {
		b.mu.Unlock()
		return
	}
	f.settled = make(chan struct{})
	ch := f.settled
	b.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
