package stages

import (
	"context"

	"github.com/sluice-go/sluice/pipeline"
)

// Invoke calls fn for the value of it as a user function of stage s, on
// the same path as this package's stages: no call once ctx is done, a
// panic becomes a *pipeline.PanicError (which s.Fail reports at the
// value's offset), the call is timed for observers and marked on pr for
// the stuck detector, and a transient error is retried under the stage's
// retry policy. It is for stages written outside this package on
// pipeline's stage-authoring API, such as sink.Produce. Call it from the
// goroutine that owns pr (from s.Probe()); ctx is s.Context().
func Invoke[In, Out any](ctx context.Context, s *pipeline.Stage, pr *pipeline.Probe, it pipeline.Item[In], fn func(context.Context, In) (Out, error)) (Out, error) {
	return invoke(s, pr, fn, ctx, it)
}
