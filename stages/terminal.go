package stages

import (
	"context"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Each calls fn for every value, in order, and ends the graph: a value's
// records complete once fn returned nil for it. Write side effects here
// (and make them idempotent: delivery is at-least-once). A nil fn fails
// the build. Calls are one at a time per partition, as in [Map], which
// says how to limit them across the consumer.
//
// While calls are fast (under 5 µs each over the previous chunk) the
// values whose call returned are completed up to 32 at a time; the
// runtime completes them itself before a commit, when the in-flight
// budget is full and before it abandons a call that ignores its context,
// so none of those waits for the call in progress (see
// [stagekit.Sink]).
func Each[T any](in pipeline.Stream[T], fn func(context.Context, T) error, opts ...CallOption) pipeline.End {
	cs := specOf("Each", opts)
	if fn == nil {
		problem(&cs.StageSpec, "stages.Each: fn is nil")
	}
	if l := limitsOf[T](cs, "Each", nil); fn != nil && (l.lim != nil || l.keys != nil) {
		user := fn
		call := wrap(l, func(ctx context.Context, v T) (struct{}, error) { return struct{}{}, user(ctx, v) })
		fn = func(ctx context.Context, v T) error { _, err := call(ctx, v); return err }
	}
	return stagekit.Sink(in, cs.StageSpec, fn)
}

// Discard ends the graph, completing every value it receives.
func Discard[T any](in pipeline.Stream[T], opts ...Option) pipeline.End {
	return stagekit.AddEnd(in, spec("Discard", opts), func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		var done []stagekit.Ticket
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[T]) error {
			done = done[:0]
			for _, it := range chunk {
				done = append(done, it.Ticket)
			}
			s.Done(done...)
			return nil
		})
	})
}
