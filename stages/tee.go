package stages

import (
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Tee sends every value down n branches: each returned stream carries all
// of in's values, in offset order. Use it when one record feeds two
// independent jobs (save the order, and also produce an alert for it);
// end every branch and join the ends with pipeline.All. [Route] is the
// stage that sends each value down one branch instead.
//
// Commits: a record commits only once every branch completed its value,
// so the committed offset follows the slowest branch. A branch that
// drops the value (Filter, a FlatMap returning nothing) completes it. An
// error marked with sluice.Invalid in one branch dead-letters the
// record once, however many branches reject it; the other branches still
// process their copy, and the record commits once they are done and the
// dead letter was delivered. Any other error in a branch stops Run, as in
// every stage.
//
// Every branch receives the same value: a pointer, slice or map in it is
// shared by the branches, which must not modify what it points to (map
// the value into a new one instead).
//
// Backpressure: Tee passes a chunk of values to every branch before it
// reads the next, so a slow branch slows them all: the fastest runs at
// most a few chunks ahead of the slowest (Tee's output buffer, [Buffer],
// plus what the slow branch's stages hold).
// On a graceful revoke every branch drains; when the partition is lost or
// its drain times out, every branch stops at once. n < 1 fails the build
// naming the stage.
func Tee[T any](in pipeline.Stream[T], n int, opts ...Option) []pipeline.Stream[T] {
	sp := spec("Tee", opts)
	if n < 1 {
		problem(&sp, "stages.Tee: n is %d; want at least 1 branch", n)
		n = 1 // the build fails before the stage runs
	}
	return stagekit.AddFanOut(in, sp, n, func(s *stagekit.Stage, inl *stagekit.Inlet[T], outs []*stagekit.Outlet[T]) error {
		return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[T]) error {
			// One reference per branch, taken before any branch can
			// complete one.
			if n > 1 {
				for _, it := range chunk {
					s.Retain(it.Ticket, n-1)
				}
			}
			for _, o := range outs {
				buf := append(o.Buffer(), chunk...)
				if !o.Send(buf) {
					return stagekit.ErrStop
				}
			}
			return nil
		})
	})
}
