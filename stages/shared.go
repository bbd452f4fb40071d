package stages

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/sluice-go/sluice/pipeline"
)

// SharedBatcher fills batches from every assigned partition, for writers
// that want one write for all partitions (ClickHouse, a bulk HTTP API).
// Create one per consumer, before pipeline.Run, and end each partition's
// graph with [SharedBatcher.Feed].
//
// A batch is written when it holds maxSize values (or weight, with the
// Weight option) and when maxWait passed since its first value. The write
// runs on the goroutine of the partition whose value completed the batch
// or whose timer fired, one write at a time. After a write succeeds, every
// value in it completes in its own partition, so each partition commits
// its share. Transient write errors are retried under the feeding stage's
// retry policy; an error marked with pipeline.Invalid dead-letters every
// record in the batch; any other error stops Run.
//
// Revoke: a revoked partition's Feed stage writes the pending batch at
// once and waits until every value of its partition was written, before
// the revoke is acknowledged. Lost partition: its values still pending
// are written with the next batch (they are already in it) but never
// committed; its next owner reads them again.
//
// Writes are serialized: a partition being revoked waits for a write in
// progress (with its retries) before it writes its own values, so keep the
// write's retry policy shorter than the drain timeout.
type SharedBatcher[T any] struct {
	write   func(context.Context, []T) error
	call    func(context.Context, []T) (struct{}, error) // write, in invoke's shape
	maxSize int
	maxWait time.Duration
	weigh   func(T) int
	spec    pipeline.StageSpec

	// writing admits one write at a time. Waiting for it ends with the
	// waiter's partition context, and blocks on a channel, which testing/
	// synctest counts as durably blocked (a sync.Mutex is not).
	writing *semaphore.Weighted

	mu     sync.Mutex
	vals   []T
	owners []entry
	weight int
	first  time.Time // when the pending batch got its first value
	feeds  map[*pipeline.Stage]*feed
}

type entry struct {
	s *pipeline.Stage
	t pipeline.Ticket
}

// feed is one partition's Feed stage: how many of its values are pending
// or being written, and who waits for them.
type feed struct {
	probe   *pipeline.Probe // watches writes of this partition's values
	pending int
	settled chan struct{} // closed when pending reaches 0, if someone waits
}

// NewSharedBatcher returns a batcher that calls write with batches of at
// most maxSize values (or weight) and waits at most maxWait (> 0) for a
// batch to fill. Options: Name, Weight, Retry.
func NewSharedBatcher[T any](write func(ctx context.Context, batch []T) error, maxSize int, maxWait time.Duration, opts ...Option) *SharedBatcher[T] {
	sp, o := spec("SharedBatch", opts)
	if write == nil {
		panic("stages.NewSharedBatcher: write is nil")
	}
	if maxSize <= 0 || maxWait <= 0 {
		panic(fmt.Sprintf("stages.NewSharedBatcher: maxSize (%d) and maxWait (%v) must be positive", maxSize, maxWait))
	}
	b := &SharedBatcher[T]{write: write,
		call: func(ctx context.Context, vals []T) (struct{}, error) { return struct{}{}, write(ctx, vals) }, maxSize: maxSize, maxWait: maxWait, spec: sp,
		weigh: func(T) int { return 1 }, feeds: make(map[*pipeline.Stage]*feed),
		writing: semaphore.NewWeighted(1)}
	if o.weight != nil {
		b.weigh = typed[func(T) int]("NewSharedBatcher", "Weight", o.weight)
	}
	return b
}

// Feed ends a partition's graph by adding its values to the shared
// batches. Call it from the builder, once per partition.
func (b *SharedBatcher[T]) Feed(in pipeline.Stream[T]) pipeline.End {
	return pipeline.AddEnd(in, b.spec, func(s *pipeline.Stage, inl *pipeline.Inlet[T]) error {
		b.mu.Lock()
		b.feeds[s] = &feed{probe: s.Probe()}
		b.mu.Unlock()
		defer b.leave(s)
		return b.run(s, inl)
	})
}

func (b *SharedBatcher[T]) run(s *pipeline.Stage, inl *pipeline.Inlet[T]) error {
	ctx := s.Context()
	weighOf := b.weighOf
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var timerC <-chan time.Time
	arm := func() {
		if timerC == nil {
			if at, ok := b.deadline(); ok {
				timer.Reset(time.Until(at))
				timerC = timer.C
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-timerC:
			timerC = nil
			if batch := b.takeIfDue(now); batch != nil {
				if !b.flush(s, batch) {
					return nil
				}
			}
			arm()
		case chunk, ok := <-inl.C():
			if ctx.Err() != nil {
				return nil // lost or timed out: neither add nor write
			}
			if !ok {
				// Drain: write what is pending, then wait for every value
				// of this partition to be written.
				if batch := b.take(); batch != nil {
					if !b.flush(s, batch) {
						return nil
					}
				}
				b.settle(ctx, s)
				return nil
			}
			for _, it := range chunk {
				w, err := call(weighOf, ctx, it.Value)
				if err != nil { // the Weight function panicked
					return s.Fail(it.Ticket, err)
				}
				if batch := b.add(s, it, w); batch != nil {
					if !b.flush(s, batch) {
						return nil
					}
				}
			}
			inl.Release(chunk)
			arm()
		}
	}
}

// pending is a batch taken out of the batcher, being written.
type pending[T any] struct {
	vals   []T
	owners []entry
}

func (b *SharedBatcher[T]) weighOf(_ context.Context, v T) (int, error) { return b.weigh(v), nil }

// add appends one value of weight w and returns the batch if it is now
// full.
func (b *SharedBatcher[T]) add(s *pipeline.Stage, it pipeline.Item[T], w int) *pending[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	var full *pending[T]
	if len(b.vals) > 0 && b.weight+w > b.maxSize {
		full = b.takeLocked()
	}
	if len(b.vals) == 0 {
		b.first = time.Now()
	}
	b.vals = append(b.vals, it.Value)
	b.owners = append(b.owners, entry{s: s, t: it.Ticket})
	b.weight += w
	b.feeds[s].pending++
	if full == nil && b.weight >= b.maxSize {
		full = b.takeLocked()
	}
	return full
}

func (b *SharedBatcher[T]) deadline() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.first.Add(b.maxWait), len(b.vals) > 0
}

func (b *SharedBatcher[T]) takeIfDue(now time.Time) *pending[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.vals) == 0 || now.Before(b.first.Add(b.maxWait)) {
		return nil
	}
	return b.takeLocked()
}

func (b *SharedBatcher[T]) take() *pending[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.vals) == 0 {
		return nil
	}
	return b.takeLocked()
}

func (b *SharedBatcher[T]) takeLocked() *pending[T] {
	p := &pending[T]{vals: b.vals, owners: b.owners}
	b.vals, b.owners, b.weight = nil, nil, 0
	return p
}

// leave forgets a Feed stage that exited; its pending values (of a lost
// partition) are still written but their completions go nowhere.
func (b *SharedBatcher[T]) leave(s *pipeline.Stage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.feeds, s)
}
