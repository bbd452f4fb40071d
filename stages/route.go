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
// completed in its branch. A pick outside the range, or a panic of pick,
// stops Run with an error naming the value's position. n < 1 or a nil
// pick fails the build. To send every value down every branch, use [Tee].
func Route[T any](in pipeline.Stream[T], n int, pick func(T) int, opts ...Option) []pipeline.Stream[T] {
	sp := spec("Route", opts)
	if n < 1 {
		problem(&sp, "stages.Route: n is %d; want at least 1 output", n)
		n = 1 // the build fails before the stage runs
	}
	if pick == nil {
		problem(&sp, "stages.Route: pick is nil")
	}
	choose := func(_ context.Context, v T) (int, error) { return pick(v), nil }
	return stagekit.AddFanOut(in, sp, n, func(s *stagekit.Stage, inl *stagekit.Inlet[T], outs []*stagekit.Outlet[T]) error {
		ctx := s.Context()
		bufs := make([][]stagekit.Item[T], n)
		send := func() bool {
			ok := true
			for i, o := range outs {
				ok = o.Send(bufs[i]) && ok
				bufs[i] = nil
			}
			return ok
		}
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[T]) error {
			for i, o := range outs {
				bufs[i] = o.Buffer()
			}
			for _, it := range chunk {
				i, err := stagekit.Protect(ctx, it.Value, choose)
				if err == nil && (i < 0 || i >= n) {
					err = fmt.Errorf("pick returned %d; want 0 <= i < %d", i, n)
				}
				if err != nil {
					send() // the values before it still complete
					return s.Fail(it.Ticket, err)
				}
				bufs[i] = append(bufs[i], it)
			}
			if !send() {
				return stagekit.ErrStop
			}
			return nil
		})
	})
}
