package stages

import (
	"context"
	"runtime/debug"

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
