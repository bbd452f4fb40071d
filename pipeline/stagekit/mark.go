package stagekit

import (
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/streams"
	"github.com/sluice-go/sluice/pipeline"
)

// Mark attaches mark to s, a stream the calling stage returns, for the
// stage that will consume it: it tells a stage wired directly to this one
// what its values are. For example stages.Batch marks its output so that
// an Unbatch right after it knows that element i of each slice comes from
// the i-th ticket joined into the slice's ticket. Call it from the
// builder, before returning s; a mark of an unexported type keeps it
// between the stages that know it.
func Mark[T any](s pipeline.Stream[T], mark any) { engine.Mark(streams.Engine(s), mark) }

// Marked returns the mark Mark attached to s, or nil. Call it from the
// builder, before consuming s.
func Marked[T any](s pipeline.Stream[T]) any { return engine.Marked(streams.Engine(s)) }
