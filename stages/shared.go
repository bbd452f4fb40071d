package stages

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// SharedBatcher fills batches from every assigned partition, for writers
// that want one write for all partitions (ClickHouse, a bulk HTTP API).
// Create one per consumer, before pipeline.Run, and end each partition's
// graph with [SharedBatcher.Feed]; any other use fails the build (see
// [NewSharedBatcher]).
//
// A batch closes when it holds maxSize values (or weight, with
// [NewSharedBatcherByWeight]) and when maxWait passed since its first
// value. Closed batches queue up and are written in order, one write at a
// time, on the Feed goroutines: the partition that closed a batch waits for its turn, then
// writes what is queued. So each partition's values are written in offset
// order. After a write succeeds, every value in it completes in its own
// partition, so each partition commits its share.
//
// The write is called like any stage function: a panic becomes a
// *sluice.PanicError, calls are timed for hooks (sluice.HookStageCall) and watched by the
// stuck detector (which names the batch's first value), and a transient
// error is retried under the retry policy of the Feed stage running it.
// Its context ends when the partition running it is lost or its drain
// times out, and once every partition with values in the batch is gone;
// honour it. An error marked with sluice.Invalid dead-letters every
// record in the batch. Any other error stops Run: every partition in the
// batch fails with a *sluice.StageError at its first value's offset,
// the partition of the batch's first value first.
//
// Revoke: the revoked partition's Feed stage closes the open batch, writes
// the queue once it is its turn, and waits until every value of its
// partition was written (at most until the drain timeout) before the
// revoke is acknowledged. When the write it runs is interrupted (a revoke
// ends its retries, a loss or a drain timeout its context), the batch goes
// back to the head of the queue without the values of partitions being
// revoked or gone, which stay uncommitted, and another partition writes
// it at once. Lost partition: its values already in a batch are written
// with it while another partition's values are in it too, but never
// committed; its next owner reads them again.
//
// A partition being revoked waits for the write in progress, with its
// retries, so keep the write's retry policy shorter than the drain
// timeout. Waiting for a turn is a channel wait, so a pipeline using a
// SharedBatcher can be tested inside a testing/synctest bubble.
type SharedBatcher[T any] struct {
	write   func(context.Context, []T) error
	call    func(context.Context, []T) (struct{}, error) // write, in invoke's shape
	maxSize int
	maxWait time.Duration
	weigh   func(T) int
	spec    stagekit.StageSpec

	// writing admits one writer at a time. Waiting for it ends with the
	// waiter's partition context, and blocks on a channel, which testing/
	// synctest counts as durably blocked (a sync.Mutex is not).
	writing *semaphore.Weighted

	mu      sync.Mutex
	open    pending[T]    // the batch being filled
	first   time.Time     // when open got its first value
	queue   []*pending[T] // full or due batches, in the order they are written
	writers int           // feeds that will write the queue: waiting for their turn or writing
	// orphaned is closed, and replaced, when the last writer quit with
	// batches still queued (it was revoked or lost): every Feed stage not
	// stopping then offers to write them.
	orphaned chan struct{}
	feeds    map[*stagekit.Stage]*feed

	shared stagekit.Shared // one batcher per Run (see NewSharedBatcher)
}

// pending is a batch of values and, for each, its partition's Feed stage
// and ticket.
type pending[T any] struct {
	vals   []T
	owners []entry
	weight int
}

type entry struct {
	s *stagekit.Stage
	t stagekit.Ticket
}

// feed is one partition's Feed stage: how many of its values are pending
// or being written, and who waits for them.
type feed struct {
	probe   *stagekit.Probe // watches writes of this partition's values
	pending int
	settled chan struct{} // closed when pending reaches 0, if someone waits
}

// NewSharedBatcher returns a batcher that calls write with batches of at
// most maxSize values and waits at most maxWait for a batch to fill.
// Create it once, before pipeline.Run, and use it in every partition's
// graph of that one Run (see [stagekit.Shared] for the build errors that
// catch other uses: a second Run, two Feeds in one graph, a batcher created
// by the builder). A nil write, maxSize < 1 or maxWait <= 0 makes every
// Feed fail the build with a *sluice.BuildError saying so.
func NewSharedBatcher[T any](write func(ctx context.Context, batch []T) error, maxSize int, maxWait time.Duration, opts ...CallOption) *SharedBatcher[T] {
	sp := Spec("SharedBatch", opts...)
	if maxSize < 1 {
		problem(&sp, "stages.NewSharedBatcher: maxSize is %d; want at least 1", maxSize)
	}
	return newSharedBatcher(sp, "NewSharedBatcher", write, maxSize, maxWait, func(T) int { return 1 })
}

// NewSharedBatcherByWeight is [NewSharedBatcher] measuring a batch's size
// with weight (for example bytes) instead of counting values: a batch
// closes when its weight reaches maxWeight. A panic of weight stops Run
// naming the value; the values before it are still written and commit. A
// nil weight or maxWeight < 1 makes every Feed fail the build.
func NewSharedBatcherByWeight[T any](write func(ctx context.Context, batch []T) error, maxWeight int, maxWait time.Duration, weight func(T) int, opts ...CallOption) *SharedBatcher[T] {
	sp := Spec("SharedBatch", opts...)
	if maxWeight < 1 {
		problem(&sp, "stages.NewSharedBatcherByWeight: maxWeight is %d; want at least 1", maxWeight)
	}
	if weight == nil {
		problem(&sp, "stages.NewSharedBatcherByWeight: weight is nil")
	}
	return newSharedBatcher(sp, "NewSharedBatcherByWeight", write, maxWeight, maxWait, weight)
}

func newSharedBatcher[T any](sp stagekit.StageSpec, fname string, write func(context.Context, []T) error, maxSize int, maxWait time.Duration, weight func(T) int) *SharedBatcher[T] {
	if write == nil {
		problem(&sp, "stages.%s: write is nil", fname)
	}
	if maxWait <= 0 {
		problem(&sp, "stages.%s: maxWait is %v; want more than 0", fname, maxWait)
	}
	b := &SharedBatcher[T]{
		write:   write,
		call:    func(ctx context.Context, vals []T) (struct{}, error) { return struct{}{}, write(ctx, vals) },
		maxSize: maxSize,
		maxWait: maxWait,
		spec:    sp,
		weigh:   weight,
		writing: semaphore.NewWeighted(1),
		feeds:   make(map[*stagekit.Stage]*feed),

		orphaned: make(chan struct{}),
	}
	b.spec.Shared = &b.shared
	return b
}

// Feed ends a partition's graph by adding its values to the shared
// batches. Call it from the builder, once per partition's graph. Its stage
// also writes batches holding other partitions' values (see
// [SharedBatcher]).
func (b *SharedBatcher[T]) Feed(in pipeline.Stream[T]) pipeline.End {
	return stagekit.AddEnd(in, b.spec, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		b.mu.Lock()
		b.feeds[s] = &feed{probe: s.Probe()}
		b.mu.Unlock()
		defer b.leave(s)
		return b.run(s, inl)
	})
}

// run is a Feed stage: it adds its partition's values to the open batch
// and, whenever it closed a batch (full, or due on its timer), writes the
// queue once it is its turn.
func (b *SharedBatcher[T]) run(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
	ctx := s.Context()
	timer := stagekit.NewTimer()
	arm := func() {
		if !timer.Armed() {
			if at, ok := b.deadline(); ok {
				timer.Arm(time.Until(at))
			}
		}
	}
	// write writes the queue when cond holds; ErrStop when s must stop.
	write := func(cond bool) error {
		if cond && !b.writeQueue(s) {
			return stagekit.ErrStop
		}
		return nil
	}
	if err := write(b.adoptOrphans(s)); err != nil {
		return nil
	}
	return stagekit.RunLoop(s, inl, stagekit.Loop[T, struct{}]{
		Wake:   b.orphans,
		OnWake: func() error { return write(b.adoptOrphans(s)) },
		Timer:  timer,
		OnTick: func(now time.Time) error {
			if err := write(b.closeDue(now)); err != nil {
				return err
			}
			arm()
			return nil
		},
		OnDrain: func() error {
			// Write what is pending, then wait for every value of this
			// partition to be written.
			if err := write(b.closeForDrain(s)); err != nil {
				return err
			}
			b.settle(ctx, s)
			return nil
		},
		OnChunk: func(chunk []stagekit.Item[T]) error {
			closed := false
			for _, it := range chunk {
				w, err := stagekit.Protect(ctx, it.Value, b.weighOf)
				if err != nil { // the weight function panicked
					// Stop Run at once, then write what came before, as
					// on a drain, so that it still completes.
					s.Abort(s.Fail(it.Ticket, err))
					if b.closeForDrain(s) && b.writeQueue(s) {
						b.settle(ctx, s)
					}
					return stagekit.ErrStop
				}
				if b.add(s, it, w) {
					closed = true
				}
			}
			if err := write(closed); err != nil {
				return err
			}
			arm()
			return nil
		},
	})
}

// orphans returns the channel closed when batches are left in the queue
// with no writer.
func (b *SharedBatcher[T]) orphans() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.orphaned
}

// adoptOrphans reports whether s should write the queue because batches
// wait there with no writer. A stopping partition does not offer: it
// cannot retry a failed write, and would only put the batch back again.
func (b *SharedBatcher[T]) adoptOrphans(s *stagekit.Stage) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writers == 0 && len(b.queue) > 0 && !s.Stopping()
}

func (b *SharedBatcher[T]) weighOf(_ context.Context, v T) (int, error) { return b.weigh(v), nil }

// add appends one value of weight w to the open batch, closing the batch
// when the value would overflow it and when it is full. It reports whether
// it closed a batch.
func (b *SharedBatcher[T]) add(s *stagekit.Stage, it stagekit.Item[T], w int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	closed := false
	if len(b.open.vals) > 0 && b.open.weight+w > b.maxSize {
		b.closeLocked()
		closed = true
	}
	if len(b.open.vals) == 0 {
		b.first = time.Now()
	}
	b.open.vals = append(b.open.vals, it.Value)
	b.open.owners = append(b.open.owners, entry{s: s, t: it.Ticket})
	b.open.weight += w
	b.feeds[s].pending++
	if b.open.weight >= b.maxSize {
		b.closeLocked()
		closed = true
	}
	return closed
}

// closeLocked moves the open batch to the end of the queue. Callers hold
// b.mu.
func (b *SharedBatcher[T]) closeLocked() {
	p := b.open
	b.queue = append(b.queue, &p)
	b.open = pending[T]{}
}

func (b *SharedBatcher[T]) deadline() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.first.Add(b.maxWait), len(b.open.vals) > 0
}

// closeDue closes the open batch if maxWait passed since its first value
// and reports whether it did.
func (b *SharedBatcher[T]) closeDue(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.open.vals) == 0 || now.Before(b.first.Add(b.maxWait)) {
		return false
	}
	b.closeLocked()
	return true
}

// closeForDrain closes the open batch, if s has values pending anywhere,
// and reports whether s must write the queue for them.
func (b *SharedBatcher[T]) closeForDrain(s *stagekit.Stage) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.feeds[s].pending == 0 {
		return false
	}
	if len(b.open.vals) > 0 {
		b.closeLocked()
	}
	return len(b.queue) > 0
}

// leave forgets a Feed stage that exited; its pending values (of a lost
// partition) may still be written, but their completions go nowhere.
func (b *SharedBatcher[T]) leave(s *stagekit.Stage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.feeds, s)
}
