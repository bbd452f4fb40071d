// Package streams converts pipeline's Stream and End to the engine's and
// back, for the packages that build stages on the engine (pipeline/stagekit,
// internal/produce). pipeline.Stream[T] is a struct of exactly one
// engine.Stream[T], and pipeline.End of exactly one engine.End, so each pair
// has the same size, alignment and pointer words (checked at compile time
// below): a conversion reinterprets the value and costs nothing. pipeline
// keeps the field unexported so that its documentation shows no engine
// type; this package is the only other place that sees both.
package streams

import (
	"unsafe"

	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/pipeline"
)

// Compile-time checks: each array length is a negative constant, which
// does not compile, unless the sizes are equal. Both sides hold one
// pointer whatever T is, so one T checks all.
var (
	_ [unsafe.Sizeof(pipeline.End{}) - unsafe.Sizeof(engine.End{})]struct{}
	_ [unsafe.Sizeof(engine.End{}) - unsafe.Sizeof(pipeline.End{})]struct{}
	_ [unsafe.Sizeof(pipeline.Stream[byte]{}) - unsafe.Sizeof(engine.Stream[byte]{})]struct{}
	_ [unsafe.Sizeof(engine.Stream[byte]{}) - unsafe.Sizeof(pipeline.Stream[byte]{})]struct{}
)

// Engine is s as the engine's stream.
func Engine[T any](s pipeline.Stream[T]) engine.Stream[T] {
	return *(*engine.Stream[T])(unsafe.Pointer(&s))
}

// Public is s as pipeline's stream.
func Public[T any](s engine.Stream[T]) pipeline.Stream[T] {
	return *(*pipeline.Stream[T])(unsafe.Pointer(&s))
}

// End is e as pipeline's End.
func End(e engine.End) pipeline.End {
	return *(*pipeline.End)(unsafe.Pointer(&e))
}
