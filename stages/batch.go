package stages

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Batch groups consecutive values into slices. A batch is emitted when it
// holds maxSize values (or maxSize weight, with the Weight option; a value
// heavier than maxSize forms a batch of its own), when maxWait has passed
// since its first value, and when the partition drains. The batch's
// records commit when the batch completes downstream. maxWait <= 0 means
// no time limit: a partial batch then waits for more values or the drain,
// so keep maxSize below the partition queue (pipeline.WithPartitionQueue)
// or the partition pauses with a batch that can never fill.
// The emitted slice is the receiver's to keep.
func Batch[T any](in pipeline.Stream[T], maxSize int, maxWait time.Duration, opts ...Option) pipeline.Stream[[]T] {
	sp, o := spec("Batch", opts)
	if maxSize <= 0 {
		panic(fmt.Sprintf("stages.Batch: maxSize must be at least 1, got %d", maxSize))
	}
	weigh := func(context.Context, T) (int, error) { return 1, nil }
	if o.weight != nil {
		w := typed[func(T) int]("Batch", "Weight", o.weight)
		weigh = func(_ context.Context, v T) (int, error) { return w(v), nil }
	}
	var batches pipeline.Stream[[]T]
	batches = stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T], out *stagekit.Outlet[[]T]) error {
		batchOutputs.Delete(batches) // the builder returned: no Unbatch looks any more
		ctx := s.Context()
		var (
			vals    []T
			tickets []stagekit.Ticket
			weight  int
			timer   = time.NewTimer(time.Hour)
			timerC  <-chan time.Time
		)
		timer.Stop()
		defer timer.Stop()
		flush := func(buf []stagekit.Item[[]T]) []stagekit.Item[[]T] {
			if len(vals) == 0 {
				return buf
			}
			t := tickets[0]
			if len(tickets) > 1 {
				t = s.Join(tickets)
			}
			buf = append(buf, stagekit.Item[[]T]{Value: vals, Ticket: t})
			vals, tickets, weight = nil, tickets[:0], 0
			timer.Stop()
			timerC = nil
			return buf
		}
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-timerC:
				timerC = nil
				if !out.Send(flush(out.Buffer())) {
					return nil
				}
			case chunk, ok := <-inl.C():
				if ctx.Err() != nil {
					return nil // cancelled: drop what was still buffered
				}
				buf := out.Buffer()
				if !ok {
					out.Send(flush(buf))
					return nil
				}
				for _, it := range chunk {
					w, err := stagekit.Protect(ctx, it.Value, weigh)
					if err != nil { // the Weight function panicked
						out.Send(flush(buf)) // the values before it still complete
						return s.Fail(it.Ticket, err)
					}
					if len(vals) > 0 && weight+w > maxSize {
						buf = flush(buf)
					}
					if len(vals) == 0 && maxWait > 0 {
						timer.Reset(maxWait)
						timerC = timer.C
					}
					vals = append(vals, it.Value)
					tickets = append(tickets, it.Ticket)
					weight += w
					if weight >= maxSize {
						buf = flush(buf)
					}
				}
				inl.Release(chunk)
				if !out.Send(buf) {
					return nil
				}
			}
		}
	})
	batchOutputs.Store(batches, struct{}{})
	return batches
}

// batchOutputs holds the streams Batch returned, from when Batch returns
// until its stage starts (after the builder returned), so that an Unbatch
// wired directly to one knows that its slices are Batch's own: element i
// comes from the i-th value joined into the slice's ticket. (An entry
// stays behind only when the builder failed after Batch and before an
// Unbatch took it, which stops Run.)
var batchOutputs sync.Map // pipeline.Stream[[]T] -> struct{}

// Unbatch emits the elements of every slice, in order; an empty slice
// completes at once.
//
// Right after a Batch, each element carries the ticket of the value it
// was batched from: its records commit when that element completed, and
// when an element fails only its own records are dead-lettered (Invalid)
// or named in the error. After any other stage, such as a Map that builds
// new slices from Batch's (a bulk lookup may return rows in any order),
// Unbatch cannot know which record an element came from: every element
// then stands for the whole slice, whose records commit when all of its
// elements completed, and one invalid element dead-letters every record
// of the slice.
func Unbatch[T any](in pipeline.Stream[[]T], opts ...Option) pipeline.Stream[T] {
	sp, _ := spec("Unbatch", opts)
	_, ownTickets := batchOutputs.LoadAndDelete(in)
	return stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[[]T], out *stagekit.Outlet[T]) error {
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			buf := out.Buffer()
			for _, it := range chunk {
				if len(it.Value) == 0 {
					s.Done(it.Ticket)
					continue
				}
				if ownTickets {
					if ts := s.Split(it.Ticket, len(it.Value)); ts != nil {
						for i, v := range it.Value {
							buf = append(buf, stagekit.Item[T]{Value: v, Ticket: ts[i]})
						}
						continue
					}
				}
				s.Retain(it.Ticket, len(it.Value)-1)
				for _, v := range it.Value {
					buf = append(buf, stagekit.Item[T]{Value: v, Ticket: it.Ticket})
				}
			}
			inl.Release(chunk)
			if !out.Send(buf) {
				return nil
			}
		}
	})
}
