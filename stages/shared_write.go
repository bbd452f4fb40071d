package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// flush writes a batch on s's goroutine, once it is s's turn, and
// completes its values in their partitions. It returns false when s must
// stop: the write failed for good and s had values in the batch (the
// failure is then already reported, see fail).
func (b *SharedBatcher[T]) flush(s *pipeline.Stage, p *pending[T]) bool {
	if b.writing.Acquire(s.Context(), 1) != nil {
		// s's partition was lost or its drain timed out while it waited.
		b.requeue(p)
		return true
	}
	interrupted, err := b.writeBatch(s, p)
	switch {
	case err == nil:
		b.complete(p.owners, func(o *pipeline.Stage, ts []pipeline.Ticket) { o.Done(ts...) })
	case pipeline.IsInvalid(err):
		b.complete(p.owners, func(o *pipeline.Stage, ts []pipeline.Ticket) {
			for _, t := range ts {
				if ferr := o.Fail(t, err); ferr != nil { // no dead-letter destination
					o.Abort(ferr)
				}
			}
		})
	case interrupted || s.Stopping():
		b.requeue(p)
	default:
		return !b.fail(s, p, err)
	}
	return true
}

// writeBatch calls write for p as s's stage function (see invoke: panics
// become errors, calls are timed, retried under s's policy and watched by
// the stuck detector), then gives the turn to the next writer. It reports
// whether the write was interrupted: its context ended (see writeContext).
func (b *SharedBatcher[T]) writeBatch(s *pipeline.Stage, p *pending[T]) (interrupted bool, err error) {
	defer b.writing.Release(1)
	ctx, done := writeContext(s, p.owners)
	defer done()
	pr, t := b.probeFor(s, p.owners)
	_, err = invoke(s, pr, b.call, ctx, pipeline.Item[[]T]{Value: p.vals, Ticket: t})
	return ctx.Err() != nil, err
}

// probeFor returns the probe and ticket the stuck detector watches a write
// under: those of the batch's first value whose partition still feeds the
// batcher (s may be writing other partitions' values), else s's own probe
// with no value.
func (b *SharedBatcher[T]) probeFor(s *pipeline.Stage, owners []entry) (*pipeline.Probe, pipeline.Ticket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range owners {
		if f := b.feeds[e.s]; f != nil {
			return f.probe, e.t
		}
	}
	return b.feeds[s].probe, pipeline.Ticket{}
}

// fail reports a write's fatal error (a permanent error, retries used up,
// a panic) to every partition with values in p, each naming its first
// value, in batch order: Run returns the error of the batch's first value.
// It reports whether s was one of them.
func (b *SharedBatcher[T]) fail(s *pipeline.Stage, p *pending[T], err error) (own bool) {
	err = fmt.Errorf("shared batch of %d values: %w", len(p.vals), err)
	b.complete(p.owners, func(o *pipeline.Stage, ts []pipeline.Ticket) {
		o.Abort(o.Fail(ts[0], err))
		own = own || o == s
	})
	return own
}

// complete calls fn with each owner's tickets, then settles the owners.
func (b *SharedBatcher[T]) complete(owners []entry, fn func(*pipeline.Stage, []pipeline.Ticket)) {
	byOwner := map[*pipeline.Stage][]pipeline.Ticket{}
	var order []*pipeline.Stage
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
func (b *SharedBatcher[T]) release(o *pipeline.Stage, n int) {
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

// requeue puts back the values of partitions that are not stopping, ahead
// of what arrived meanwhile; the stopping ones are released uncommitted.
func (b *SharedBatcher[T]) requeue(p *pending[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var vals []T
	var owners []entry
	for i, e := range p.owners {
		if e.s.Stopping() {
			b.release(e.s, 1)
			continue
		}
		vals = append(vals, p.vals[i])
		owners = append(owners, e)
	}
	if len(vals) == 0 {
		return
	}
	if len(b.vals) == 0 {
		b.first = time.Now()
	}
	for _, v := range vals {
		b.weight += b.weigh(v)
	}
	b.vals = append(vals, b.vals...)
	b.owners = append(owners, b.owners...)
}

// settle waits until every value s added was written (or ctx ends).
func (b *SharedBatcher[T]) settle(ctx context.Context, s *pipeline.Stage) {
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
