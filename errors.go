package sluice

import (
	"errors"
	"fmt"
)

// Causes of a partition context's cancellation, as reported by
// context.Cause(p.Context()) for the pipeline.Partition a graph was built
// for.
var (
	// ErrRevoked: the partition was revoked (or Run shut down) and its graph
	// drained in time.
	ErrRevoked = errors.New("partition revoked")
	// ErrDrainTimeout: the partition was revoked but its graph did not drain
	// within the drain timeout; unfinished records are not committed.
	ErrDrainTimeout = errors.New("partition drain timed out")
	// ErrLost: the partition was lost (another consumer may own it already);
	// nothing more of it is committed.
	ErrLost = errors.New("partition lost")
)

// ErrAbandoned is wrapped by the *[StageError] that stops Run when a user
// function (a stage's, an OnClose hook, the dead-letter function) ignored
// its context: it was still running a quarter of the drain timeout, at
// least 1 s (the exit grace), after its partition's context was cancelled
// (the drain timed out, the partition was lost) or, for an OnClose hook,
// after its own context expired. The StageError names the stage
// ("OnClose" for a hook), the partition and the offset of the partition's
// first unfinished record (-1 for a hook), where its committed offset
// stops. Run does not wait for the function: Go cannot stop a goroutine,
// so it is left running (abandoned), and Run returns so that a process
// manager restarts the consumer.
var ErrAbandoned = errors.New("the function did not return after its context was done; its goroutine is abandoned (a function must return when its context is done)")

// ErrMissingTopic is wrapped by the errors of the start checks of the
// Kafka clients (packages source, sink/confluent and franz) when a topic the
// consumer needs does not exist: an input topic (the source's Run returns
// it before joining the group) or the dead-letter topic (Run returns it
// before the source starts, see [StartChecker]). The error names the
// topic, its role and the option that turns the check off. A Produce
// stage's missing output topic fails the first graph using it with a
// *[BuildError] whose Problem says the same.
var ErrMissingTopic = errors.New("topic does not exist")

// StageError is the error Run returns when a stage function fails: it
// names the stage and the position of the (first) record the failing value
// came from. Use it as *StageError with errors.As.
type StageError struct {
	Stage     string // the stage's name ("OnClose" for a partition's close hook)
	Topic     string
	Partition int32
	Offset    int64 // -1 when the position is unknown, as for OnClose hooks
	Err       error // the stage function's error; a *PanicError for a panic
}

// Error names the stage, the partition and the offset, then the cause.
func (e *StageError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("sluice: stage %q on %s/%d: %v", e.Stage, e.Topic, e.Partition, e.Err)
	}
	return fmt.Sprintf("sluice: stage %q on %s/%d at offset %d: %v", e.Stage, e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns Err.
func (e *StageError) Unwrap() error { return e.Err }

// BuildError reports a graph that a pipeline.Builder wired incorrectly (a
// stream consumed twice or never, streams of two partitions mixed, no
// End) or that panicked. Use it as *BuildError with errors.As; for a
// builder that panicked, errors.As finds the *[PanicError] through it.
type BuildError struct {
	Topic     string
	Partition int32
	// Problem is what is wrong and how to fix it, or "the builder
	// panicked" with the panic value and stack.
	Problem string
	// Err is the *PanicError of a builder that panicked; nil for a
	// wiring problem.
	Err error
}

// Error names the partition and the problem.
func (e *BuildError) Error() string {
	return fmt.Sprintf("sluice: building the graph of %s/%d: %s", e.Topic, e.Partition, e.Problem)
}

// Unwrap returns Err: the *PanicError of a builder that panicked, or nil.
func (e *BuildError) Unwrap() error { return e.Err }
