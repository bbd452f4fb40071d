package engine

import (
	"errors"
	"fmt"
)

// ErrNoDeadLetter is wrapped by the error that stops [Run] when a stage
// reports invalid input (see [Invalid]) and no dead-letter destination was
// configured with pipeline.WithDeadLetter.
var ErrNoDeadLetter = errors.New("invalid record and no dead-letter destination configured (use pipeline.WithDeadLetter)")

// Causes of a partition context's cancellation, as reported by
// context.Cause(p.Context()).
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

// Invalid marks err as bad input: the record (or records) the failing value
// came from is sent to the dead-letter destination and its offset counts as
// done. Stage functions return Invalid(err) for data they can never process
// (malformed JSON, a missing field); any other error stops Run. Invalid(nil)
// is nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{err: err}
}

// IsInvalid reports whether err (or any error it wraps) was marked with
// [Invalid].
func IsInvalid(err error) bool { return wraps[*invalidError](err) }

// InvalidCause returns the error that err wraps and true when err itself
// (not an error wrapping it) is a mark of [Invalid]; nil and false
// otherwise. It lets the dead-letter message take the common case's
// text without searching err's tree.
func InvalidCause(err error) (error, bool) {
	if ie, ok := err.(*invalidError); ok {
		return ie.err, true
	}
	return nil, false
}

type invalidError struct{ err error }

func (e *invalidError) Error() string { return "invalid input: " + e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// StageError is the error Run returns when a stage function fails: it names
// the stage and the position of the (first) record the failing value came
// from. Err is the stage function's error (a *PanicError for a panic).
type StageError struct {
	Stage     string
	Topic     string
	Partition int32
	Offset    int64 // -1 when the position is unknown
	Err       error
}

// Error names the stage, the partition and the offset, then the cause.
func (e *StageError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("sluice: stage %q on %s/%d: %v", e.Stage, e.Topic, e.Partition, e.Err)
	}
	return fmt.Sprintf("sluice: stage %q on %s/%d at offset %d: %v", e.Stage, e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns the stage function's error.
func (e *StageError) Unwrap() error { return e.Err }

// BuildError reports a graph that a [Builder] wired incorrectly (a stream
// consumed twice or never, streams of two partitions mixed, no End), or a
// builder that panicked: then Err is the *PanicError, and Problem says so
// and carries its value and stack.
type BuildError struct {
	Topic     string
	Partition int32
	Problem   string
	Err       error // the builder's *PanicError; nil for a wiring problem
}

// Error names the partition and the wiring problem.
func (e *BuildError) Error() string {
	return fmt.Sprintf("sluice: building the graph of %s/%d: %s", e.Topic, e.Partition, e.Problem)
}

// Unwrap returns Err: the *PanicError of a builder that panicked, or nil.
func (e *BuildError) Unwrap() error { return e.Err }
