package pipeline

import "github.com/sluice-go/sluice/internal/engine"

// Stream is a typed, bounded flow of values inside one partition's graph.
// A Stream is created by Run (the builder's input) or by a stage, and must
// be consumed by exactly one stage; a graph whose streams are not all
// consumed, or consumed twice, fails to build with a [sluice.BuildError].
// Values travel in chunks over a bounded channel, in offset order. A
// Stream has no methods: pass it to the stages of package stages (or to
// package stagekit's AddStage, AddFanOut and AddEnd), from the builder
// only. The zero Stream is not usable (a stage given one fails the build).
//
// A Stream holds one engine stream and nothing else, so that package
// stagekit converts between the two at no cost.
type Stream[T any] struct{ s engine.Stream[T] }

// End is what a terminal stage returns. A graph is complete only when the
// builder returns an End of that graph; join several with [All]. End has
// no methods; the zero End fails the build. Like [Stream], it holds the
// engine's End and nothing else, for package stagekit to convert.
type End struct{ e engine.End }

// All returns one End for a graph that fans out (see stages.Route). Every
// end must belong to the same graph; no ends, a zero End or ends of two
// partitions' graphs fail the build with a [sluice.BuildError].
func All(ends ...End) End {
	es := make([]engine.End, len(ends))
	for i, e := range ends {
		es[i] = e.e
	}
	return End{engine.All(es...)}
}
