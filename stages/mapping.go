package stages

import (
	"context"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Map applies fn to every value, one at a time, in order. An error from fn
// is handled as the package doc says.
func Map[In, Out any](in pipeline.Stream[In], fn func(context.Context, In) (Out, error), opts ...Option) pipeline.Stream[Out] {
	sp, _ := spec("Map", opts)
	return stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[In], out *stagekit.Outlet[Out]) error {
		ctx := s.Context()
		pr := s.Probe()
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			buf := out.Buffer()
			for _, it := range chunk {
				v, err := stagekit.Call(ctx, s, pr, it, fn)
				if err != nil {
					if err := s.Fail(it.Ticket, err); err != nil {
						out.Send(buf) // what finished before the failure still completes
						return err
					}
					continue
				}
				buf = append(buf, stagekit.Item[Out]{Value: v, Ticket: it.Ticket})
			}
			inl.Release(chunk)
			if !out.Send(buf) {
				return nil
			}
		}
	})
}

// Filter passes on the values for which keep returns true. Dropped values
// count as done at once, so a filtered tail of a partition is committed.
func Filter[T any](in pipeline.Stream[T], keep func(T) bool, opts ...Option) pipeline.Stream[T] {
	sp, _ := spec("Filter", opts)
	pred := func(_ context.Context, v T) (bool, error) { return keep(v), nil }
	return stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T], out *stagekit.Outlet[T]) error {
		ctx := s.Context()
		var dropped []stagekit.Ticket
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			buf := out.Buffer()
			dropped = dropped[:0]
			for _, it := range chunk {
				ok, err := stagekit.Protect(ctx, it.Value, pred)
				if err != nil {
					if len(dropped) > 0 {
						s.Drop(dropped...)
					}
					out.Send(buf)
					return s.Fail(it.Ticket, err)
				}
				if ok {
					buf = append(buf, it)
				} else {
					dropped = append(dropped, it.Ticket)
				}
			}
			inl.Release(chunk)
			if len(dropped) > 0 {
				s.Drop(dropped...)
			}
			if !out.Send(buf) {
				return nil
			}
		}
	})
}

// FlatMap replaces every value with the values fn returns for it, in
// order. The input record commits only when all of its outputs completed;
// an empty result completes it at once.
func FlatMap[In, Out any](in pipeline.Stream[In], fn func(context.Context, In) ([]Out, error), opts ...Option) pipeline.Stream[Out] {
	sp, _ := spec("FlatMap", opts)
	return stagekit.AddStage(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[In], out *stagekit.Outlet[Out]) error {
		ctx := s.Context()
		pr := s.Probe()
		var empty []stagekit.Ticket
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			buf := out.Buffer()
			empty = empty[:0]
			for _, it := range chunk {
				vs, err := stagekit.Call(ctx, s, pr, it, fn)
				if err != nil {
					if err := s.Fail(it.Ticket, err); err != nil {
						// what finished before the failure still completes
						if len(empty) > 0 {
							s.Done(empty...)
						}
						out.Send(buf)
						return err
					}
					continue
				}
				if len(vs) == 0 {
					empty = append(empty, it.Ticket)
					continue
				}
				s.Retain(it.Ticket, len(vs)-1)
				for _, v := range vs {
					buf = append(buf, stagekit.Item[Out]{Value: v, Ticket: it.Ticket})
				}
			}
			inl.Release(chunk)
			if len(empty) > 0 {
				s.Done(empty...)
			}
			if !out.Send(buf) {
				return nil
			}
		}
	})
}
