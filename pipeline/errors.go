package pipeline

import (
	"errors"

	"github.com/sluice-go/sluice/internal/engine"
)

// ErrMissingTopic is wrapped by the errors of the start checks of the
// Kafka clients (packages source, sink and franz) when a topic the
// consumer needs does not exist: an input topic (the source's Run returns
// it before joining the group) or the dead-letter topic (Run returns it
// before the source starts, see [StartChecker]). The error names the
// topic, its role and the option that turns the check off. A Produce
// stage's missing output topic fails the first graph using it with a
// *BuildError whose Problem says the same.
var ErrMissingTopic = errors.New("topic does not exist")

// ErrNoDeadLetter is wrapped by the error that stops [Run] when a stage
// reports invalid input (see [Invalid]) and no dead-letter destination was
// configured with [WithDeadLetter].
var ErrNoDeadLetter = engine.ErrNoDeadLetter

// Causes of a partition context's cancellation, as reported by
// context.Cause(p.Context()).
var (
	// ErrRevoked: the partition was revoked (or Run shut down) and its graph
	// drained in time.
	ErrRevoked = engine.ErrRevoked
	// ErrDrainTimeout: the partition was revoked but its graph did not drain
	// within the drain timeout; unfinished records are not committed.
	ErrDrainTimeout = engine.ErrDrainTimeout
	// ErrLost: the partition was lost (another consumer may own it already);
	// nothing more of it is committed.
	ErrLost = engine.ErrLost
)

// Invalid marks err as bad input: the record (or records) the failing value
// came from is sent to the dead-letter destination and its offset counts as
// done. Stage functions return Invalid(err) for data they can never process
// (malformed JSON, a missing field); any other error stops Run. Invalid(nil)
// is nil. The returned error wraps err.
func Invalid(err error) error { return engine.Invalid(err) }

// IsInvalid reports whether err (or any error it wraps) was marked with
// [Invalid].
func IsInvalid(err error) bool { return engine.IsInvalid(err) }

// StageError is the error Run returns when a stage function fails: it names
// the stage and the position of the (first) record the failing value came
// from. It is a struct with the fields Stage (string, the stage's name),
// Topic (string), Partition (int32), Offset (int64, -1 when the position
// is unknown, as for OnClose hooks) and Err (error: the stage function's
// error, a *PanicError for a panic). Its Error method names the stage, the
// partition and the offset, then the cause; Unwrap returns Err. Use it as
// *StageError with errors.As.
type StageError = engine.StageError

// PanicError is a panic recovered from a user function: a stage function,
// an OnClose hook or the dead-letter function (Run returns it inside a
// *StageError), or a builder (inside a *BuildError). It is never retried.
// It is a struct with the fields Value (any, what was passed to panic) and
// Stack ([]byte, the panicking goroutine's stack); its Error method returns
// both, and its Unwrap method returns Value when it is an error (so
// errors.Is sees through panic(err)). Use it as *PanicError with
// errors.As.
type PanicError = engine.PanicError

// BuildError reports a graph that a [Builder] wired incorrectly (a stream
// consumed twice or never, streams of two partitions mixed, no End) or
// that panicked. It is a struct with the fields Topic (string), Partition
// (int32), Problem (string: what is wrong and how to fix it, or "the
// builder panicked" with the panic value and stack) and Err (error: the
// *PanicError of a builder that panicked, nil for a wiring problem); its
// Error method names the partition and the problem, and Unwrap returns
// Err, so errors.As finds the *PanicError of a builder panic. Use it as
// *BuildError with errors.As.
type BuildError = engine.BuildError

// ErrAbandoned is wrapped by the *StageError that stops [Run] when a user
// function ignored its context: it was still running a quarter of the
// drain timeout, at least 1 s (the exit grace), after its partition's
// context was cancelled (the drain timed out, the partition was lost) or,
// for an
// OnClose hook, after its own context expired. The StageError names the
// stage ("OnClose" for a hook), the partition and the offset of the
// partition's first unfinished record (-1 for a hook), where its committed
// offset stops. Run does not wait for the function: Go cannot stop a
// goroutine, so it is left running (abandoned), and Run returns so that a
// process manager restarts the consumer.
var ErrAbandoned = engine.ErrAbandoned
