package stages

import (
	"fmt"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Option configures one stage. Options that do not apply to a stage are
// ignored; a typed option whose type does not match the stage's values
// (ByKey, Weight) fails the build with a clear error.
type Option func(*options)

type options struct {
	name   string
	buffer int
	retry  *pipeline.RetryPolicy
	key    any
	weight any
}

// Name names the stage in errors, logs and dead letters (default: its kind
// and position, as in "Map#2").
func Name(name string) Option { return func(o *options) { o.name = name } }

// Buffer sets the capacity, in chunks, of the stage's output channel
// (default 4).
func Buffer(chunks int) Option { return func(o *options) { o.buffer = chunks } }

// Retry sets the stage's retry policy for transient errors of its
// function, overriding pipeline.WithRetry. Use
// pipeline.RetryPolicy{Attempts: 1} for no retries.
func Retry(p pipeline.RetryPolicy) Option { return func(o *options) { o.retry = &p } }

// ByKey makes a Pool keep values with the same key in order: calls for one
// key never overlap and run in offset order, while different keys run in
// parallel. T must be the Pool's input type.
func ByKey[T any](key func(T) string) Option { return func(o *options) { o.key = key } }

// Weight makes a Batch measure its size with w (for example bytes) instead
// of counting values. T must be the Batch's element type.
func Weight[T any](w func(T) int) Option { return func(o *options) { o.weight = w } }

// Spec returns the stagekit.StageSpec that opts describe for a stage of
// the given kind. Stages written outside this package (such as the Kafka
// producer stage in package sink) use it to accept the same options.
func Spec(kind string, opts ...Option) stagekit.StageSpec {
	sp, _ := spec(kind, opts)
	return sp
}

func spec(kind string, opts []Option) (stagekit.StageSpec, options) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return stagekit.StageSpec{Name: o.name, Kind: kind, Buffer: o.buffer, Retry: o.retry}, o
}

// typed returns the option value as F, or panics with a build error.
func typed[F any](kind, option string, v any) F {
	f, ok := v.(F)
	if !ok {
		var want F
		panic(fmt.Sprintf("stages.%s: option %s has type %T, want %T", kind, option, v, want))
	}
	return f
}
