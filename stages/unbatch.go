package stages

import (
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

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
	_, ownTickets := stagekit.Marked(in).(batchMark)
	return stagekit.AddStage(in, spec("Unbatch", opts), func(s *stagekit.Stage, inl *stagekit.Inlet[[]T], out *stagekit.Outlet[T]) error {
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[[]T]) error {
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
			if !out.Send(buf) {
				return stagekit.ErrStop
			}
			return nil
		})
	})
}
