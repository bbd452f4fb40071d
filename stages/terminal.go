package stages

import (
	"context"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Each calls fn for every value, in order, and ends the graph: a value's
// records complete when fn returns nil for it. Write side effects here
// (and make them idempotent: delivery is at-least-once).
func Each[T any](in pipeline.Stream[T], fn func(context.Context, T) error, opts ...Option) pipeline.End {
	sp, _ := spec("Each", opts)
	call1 := func(ctx context.Context, v T) (struct{}, error) { return struct{}{}, fn(ctx, v) }
	return stagekit.AddEnd(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		ctx := s.Context()
		pr := s.Probe()
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			// Each value completes as soon as fn returns, so the commit
			// never waits for the rest of a chunk.
			for _, it := range chunk {
				if _, err := stagekit.Call(ctx, s, pr, it, call1); err != nil {
					if err := s.Fail(it.Ticket, err); err != nil {
						return err
					}
					continue
				}
				s.Done(it.Ticket)
			}
			inl.Release(chunk)
		}
	})
}

// Discard ends the graph, completing every value it receives.
func Discard[T any](in pipeline.Stream[T], opts ...Option) pipeline.End {
	sp, _ := spec("Discard", opts)
	return stagekit.AddEnd(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		var done []stagekit.Ticket
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			done = done[:0]
			for _, it := range chunk {
				done = append(done, it.Ticket)
			}
			inl.Release(chunk)
			s.Done(done...)
		}
	})
}
