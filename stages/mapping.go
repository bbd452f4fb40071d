package stages

import (
	"context"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Map applies fn to every value, one at a time, in order. An error from fn
// is handled as the package doc says. A nil fn fails the build.
//
// One at a time is per partition: each partition's graph has its own Map,
// so a consumer with n partitions makes up to n calls at once. For a
// limit across the consumer give a [Limiter] (calls at once) or
// [LockKey] (one call at a time per key) as an option.
func Map[In, Out any](in pipeline.Stream[In], fn func(context.Context, In) (Out, error), opts ...CallOption) pipeline.Stream[Out] {
	cs := specOf("Map", opts)
	fn = limitedFn(cs, "Map", nil, fn)
	return stagekit.Transform(in, cs.StageSpec, func(ctx context.Context, v In, emit *stagekit.Emitter[Out]) error {
		out, err := fn(ctx, v)
		if err == nil {
			emit.Emit(out)
		}
		return err
	})
}

// Filter passes on the values for which keep returns true. Dropped values
// count as done at once, so a filtered tail of a partition is committed.
// A panic of keep stops Run naming the value. A nil keep fails the build.
func Filter[T any](in pipeline.Stream[T], keep func(T) bool, opts ...Option) pipeline.Stream[T] {
	sp := spec("Filter", opts)
	if keep == nil {
		problem(&sp, "stages.Filter: keep is nil")
	}
	return stagekit.Transform(in, sp, func(_ context.Context, v T, emit *stagekit.Emitter[T]) error {
		if keep(v) {
			emit.Emit(v)
		}
		return nil
	})
}

// FlatMap replaces every value with the values fn returns for it, in
// order. The input record commits only when all of its outputs completed;
// an empty result completes it at once (counted as filtered). A nil fn
// fails the build. Calls are one at a time per partition, as in [Map],
// which says how to limit them across the consumer. To send every value
// down several branches, use [Tee].
func FlatMap[In, Out any](in pipeline.Stream[In], fn func(context.Context, In) ([]Out, error), opts ...CallOption) pipeline.Stream[Out] {
	cs := specOf("FlatMap", opts)
	fn = limitedFn(cs, "FlatMap", nil, fn)
	return stagekit.Transform(in, cs.StageSpec, func(ctx context.Context, v In, emit *stagekit.Emitter[Out]) error {
		outs, err := fn(ctx, v)
		if err != nil {
			return err
		}
		for _, o := range outs {
			emit.Emit(o)
		}
		return nil
	})
}
