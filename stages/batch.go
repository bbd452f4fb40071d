package stages

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Batch groups consecutive values into slices. A batch is emitted when it
// holds maxSize values, when maxWait has passed since its first value, and
// when the partition drains. The batch's records commit when the batch
// completes downstream. maxWait 0 means no time limit: a partial batch
// then waits for more values or the drain, so keep maxSize below the
// partition queue (pipeline.WithPartitionQueue) or the partition pauses
// with a batch that can never fill. The emitted slice is the receiver's
// to keep. maxSize < 1 or a negative maxWait fails the build.
func Batch[T any](in pipeline.Stream[T], maxSize int, maxWait time.Duration, opts ...Option) pipeline.Stream[[]T] {
	sp := spec("Batch", opts)
	if maxSize < 1 {
		problem(&sp, "stages.Batch: maxSize is %d; want at least 1", maxSize)
	}
	sp.Holds = maxSize // its first batch must be fed whole (StageSpec.Holds)
	return batch(in, sp, maxSize, maxWait, nil)
}

// BatchByWeight is [Batch] measuring a batch's size with weight (for
// example bytes) instead of counting values: a batch is emitted when its
// weight reaches maxWeight; a value heavier than maxWeight forms a batch
// of its own. A panic of weight stops Run naming the value; the values
// before it are still emitted. maxWeight < 1, a negative maxWait or a nil
// weight fails the build.
func BatchByWeight[T any](in pipeline.Stream[T], maxWeight int, maxWait time.Duration, weight func(T) int, opts ...Option) pipeline.Stream[[]T] {
	sp := spec("Batch", opts)
	if maxWeight < 1 {
		problem(&sp, "stages.BatchByWeight: maxWeight is %d; want at least 1", maxWeight)
	}
	if weight == nil {
		problem(&sp, "stages.BatchByWeight: weight is nil")
	}
	return batch(in, sp, maxWeight, maxWait, weight)
}

// batchMark marks Batch's output streams: an Unbatch wired directly to one
// knows that element i of each slice comes from the i-th ticket joined
// into the slice's ticket.
type batchMark struct{}

func batch[T any](in pipeline.Stream[T], sp stagekit.StageSpec, maxSize int, maxWait time.Duration, weight func(T) int) pipeline.Stream[[]T] {
	if maxWait < 0 {
		problem(&sp, "stages.Batch: maxWait is %v; want 0 (no time limit) or more", maxWait)
	}
	var weigh func(context.Context, T) (int, error) // nil: each value counts 1
	if weight != nil {
		weigh = func(_ context.Context, v T) (int, error) { return weight(v), nil }
	}
	out := stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T], out *stagekit.Outlet[[]T]) error {
		b := &batcher[T]{s: s, out: out, maxSize: maxSize, maxWait: maxWait, weigh: weigh, weighed: weight != nil,
			timer: stagekit.NewTimer()}
		return stagekit.RunLoop(s, inl, stagekit.Loop[T, struct{}]{
			OnChunk: b.chunk,
			Timer:   b.timer,
			OnTick:  func(time.Time) error { return b.send(b.flush(out.Buffer())) },
			OnDrain: func() error { out.Send(b.flush(out.Buffer())); return nil },
		})
	})
	stagekit.Mark(out, batchMark{})
	return out
}

// batcher is a running Batch stage's open batch.
type batcher[T any] struct {
	s       *stagekit.Stage
	out     *stagekit.Outlet[[]T]
	maxSize int
	maxWait time.Duration
	weigh   func(context.Context, T) (int, error) // nil unless weighed
	weighed bool                                  // a weight function, not a count, sizes batches
	timer   *stagekit.Timer

	vals    []T
	tickets []stagekit.Ticket
	weight  int
	last    int // values in the last batch emitted
}

// sizeHint is the capacity of a new batch: as many values as the last
// batch held (a batch emitted by maxWait may hold fewer than maxSize), and
// never more than maxSize values when they are counted.
func (b *batcher[T]) sizeHint() int {
	n := max(b.last, 16)
	if !b.weighed {
		n = min(n, b.maxSize)
	}
	return n
}

func (b *batcher[T]) chunk(chunk []stagekit.Item[T]) error {
	ctx := b.s.Context()
	buf := b.out.Buffer()
	for _, it := range chunk {
		w := 1 // counted: no function to call
		if b.weighed {
			var err error
			if w, err = stagekit.Protect(ctx, it.Value, b.weigh); err != nil { // the weight function panicked
				b.out.Send(b.flush(buf)) // the values before it still complete
				return b.s.Fail(it.Ticket, err)
			}
		}
		if len(b.vals) > 0 && b.weight+w > b.maxSize {
			buf = b.flush(buf)
		}
		if len(b.vals) == 0 {
			if b.maxWait > 0 {
				b.timer.Arm(b.maxWait)
			}
			if b.vals == nil {
				// One allocation per batch (the receiver keeps it).
				b.vals = make([]T, 0, b.sizeHint())
			}
		}
		b.vals = append(b.vals, it.Value)
		b.tickets = append(b.tickets, it.Ticket)
		b.weight += w
		if b.weight >= b.maxSize {
			buf = b.flush(buf)
		}
	}
	return b.send(buf)
}

// flush appends the open batch, if any, to buf as one value holding a
// joined ticket, and starts a new batch.
func (b *batcher[T]) flush(buf []stagekit.Item[[]T]) []stagekit.Item[[]T] {
	if len(b.vals) == 0 {
		return buf
	}
	t := b.tickets[0]
	if len(b.tickets) > 1 {
		t = b.s.Join(b.tickets)
	}
	buf = append(buf, stagekit.Item[[]T]{Value: b.vals, Ticket: t})
	b.last = len(b.vals)
	b.vals, b.tickets, b.weight = nil, b.tickets[:0], 0
	b.timer.Stop()
	return buf
}

func (b *batcher[T]) send(buf []stagekit.Item[[]T]) error {
	if !b.out.Send(buf) {
		return stagekit.ErrStop
	}
	return nil
}
