package stages

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Option configures any stage: [Name] and [Buffer] are Options. An option
// a stage cannot use does not compile: Filter, Route, Batch, Unbatch and
// Discard take Options only, the stages calling a fallible function take
// [CallOption]s.
type Option interface {
	applyTo(*stagekit.StageSpec)
}

// CallOption configures a stage that calls a function of yours that can
// fail (Map, FlatMap, Pool, PoolByKey, Each, SharedBatcher, sink.Produce):
// [Name], [Buffer] and [Retry]; and, for Map, FlatMap, Pool, PoolByKey and
// Each only, the consumer-wide limits [Limiter], [KeyLock] and [LockKey]
// (any other stage given one fails the build).
type CallOption interface {
	applyToCall(*callSpec)
}

// callSpec is what CallOptions describe: the stagekit.StageSpec, and the
// consumer-wide limits on the calls of the stage's function (limits.go).
type callSpec struct {
	stagekit.StageSpec
	lim  *Limiter
	keys *KeyLock
	key  any // LockKey's key function, a func(T) string; nil: the stage's own key
}

// Common is an option for every stage, returned by [Name] and [Buffer]: it
// is both an [Option] and a [CallOption].
type Common struct{ set func(*stagekit.StageSpec) }

func (c Common) applyTo(sp *stagekit.StageSpec) { c.set(sp) }
func (c Common) applyToCall(cs *callSpec)       { c.set(&cs.StageSpec) }

// RetryOption is the option [Retry] returns, a [CallOption] only: a stage
// with no fallible function has nothing to retry.
type RetryOption struct{ p sluice.RetryPolicy }

func (r RetryOption) applyToCall(cs *callSpec) {
	p := r.p
	cs.Retry = &p
}

// Name names the stage in errors, logs and dead letters (default: its kind
// and position, as in "Map#2").
func Name(name string) Common { return Common{func(sp *stagekit.StageSpec) { sp.Name = name }} }

// Buffer sets the capacity, in chunks, of the stage's output channel
// (default 4). A negative capacity fails the build naming the stage.
func Buffer(chunks int) Common {
	return Common{func(sp *stagekit.StageSpec) {
		sp.Buffer = chunks
		if chunks < 0 {
			problem(sp, "stages.Buffer(%d): the capacity must be 0 (the default) or more", chunks)
		}
	}}
}

// Retry sets the stage's retry policy for transient errors of its
// function, overriding pipeline.WithRetry. Use
// sluice.RetryPolicy{Attempts: 1} for no retries. An invalid policy
// fails the build naming the stage.
func Retry(p sluice.RetryPolicy) RetryOption { return RetryOption{p} }

// Spec returns the stagekit.StageSpec that opts describe for a stage of
// the given kind calling a function of its user. Stages written outside
// this package (such as the Kafka producer stage in package sink) use it
// to accept the same options as the stages here. The limits ([Limiter],
// [KeyLock], [LockKey]) apply to the stages of this package that take
// them: given to Spec, they make the stage fail the build saying so.
func Spec(kind string, opts ...CallOption) stagekit.StageSpec {
	cs := specOf(kind, opts)
	if cs.lim != nil || cs.keys != nil {
		problem(&cs.StageSpec, "stages.Limiter and stages.KeyLock limit the calls of Map, FlatMap, Pool, PoolByKey and Each; %s does not take them", kind)
	}
	return cs.StageSpec
}

// specOf returns the callSpec that opts describe for a stage of the given
// kind.
func specOf(kind string, opts []CallOption) *callSpec {
	cs := &callSpec{StageSpec: stagekit.StageSpec{Kind: kind}}
	for _, o := range opts {
		o.applyToCall(cs)
	}
	return cs
}

// spec is the stagekit.StageSpec of a stage with no fallible function.
func spec(kind string, opts []Option) stagekit.StageSpec {
	sp := stagekit.StageSpec{Kind: kind}
	for _, o := range opts {
		o.applyTo(&sp)
	}
	return sp
}
