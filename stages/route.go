package stages

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Route fans in out to n streams: every value goes to the stream pick
// returns (0 <= pick(v) < n). Each stream keeps offset order; join the
// branches' ends with pipeline.All. A record commits when its value
// completed in its branch. A pick outside the range stops Run with an
// error naming the value's position.
func Route[T any](in pipeline.Stream[T], n int, pick func(T) int, opts ...Option) []pipeline.Stream[T] {
	sp, _ := spec("Route", opts)
	if n <= 0 {
		panic(fmt.Sprintf("stages.Route: n must be at least 1, got %d", n))
	}
	choose := func(_ context.Context, v T) (int, error) { return pick(v), nil }
	return stagekit.AddFanOut(in, sp, n, func(s *stagekit.Stage, inl *stagekit.Inlet[T], outs []*stagekit.Outlet[T]) error {
		ctx := s.Context()
		bufs := make([][]stagekit.Item[T], n)
		for {
			chunk, ok := inl.Recv()
			if !ok {
				return nil
			}
			for i, o := range outs {
				bufs[i] = o.Buffer()
			}
			for _, it := range chunk {
				i, err := stagekit.Protect(ctx, it.Value, choose)
				if err == nil && (i < 0 || i >= n) {
					err = fmt.Errorf("pick returned %d; want 0 <= i < %d", i, n)
				}
				if err != nil {
					for j, o := range outs {
						o.Send(bufs[j])
					}
					return s.Fail(it.Ticket, err)
				}
				bufs[i] = append(bufs[i], it)
			}
			inl.Release(chunk)
			for i, o := range outs {
				if !o.Send(bufs[i]) {
					return nil
				}
			}
		}
	})
}
