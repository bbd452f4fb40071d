package stages

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// call runs a user function, turning a panic into a *pipeline.PanicError.
func call[In, Out any](fn func(context.Context, In) (Out, error), ctx context.Context, v In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &pipeline.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, v)
}

// invoke calls fn for it's value as a stage's user function: marked on
// the probe for the stuck detector, timed for observers, and retried under
// the stage's retry policy while the error is transient.
func invoke[In, Out any](s *pipeline.Stage, pr *pipeline.Probe, fn func(context.Context, In) (Out, error), ctx context.Context, it pipeline.Item[In]) (Out, error) {
	if err := ctx.Err(); err != nil {
		// The partition was lost or its drain timed out: no more calls.
		var zero Out
		return zero, context.Cause(ctx)
	}
	pr.Enter(it.Ticket)
	defer pr.Leave()
	v := it.Value
	for attempt := 1; ; attempt++ {
		var out Out
		var err error
		if s.Observed() {
			start := time.Now()
			out, err = call(fn, ctx, v)
			s.Called(time.Since(start), err)
		} else {
			out, err = call(fn, ctx, v)
		}
		// No retry once ctx is done: the value can no longer complete
		// (Pool's workers see their emitter's failure this way).
		if err == nil || ctx.Err() != nil || !s.Retry(err, attempt) {
			return out, err
		}
	}
}
