package produce

import "errors"

// ErrClosed is sink.ErrClosed: errors.Is finds it in the errors of every
// backend's closed producer, whose own sentinel ([NewErrClosed]) names
// the backend.
var ErrClosed = errors.New("sink: the producer is closed")

// NewErrClosed returns the ErrClosed sentinel of the backend named pkg
// (its Names.ErrClosed): its text is "<pkg>: the producer is closed", and
// errors.Is(err, ErrClosed) holds for it, so that a program checks
// sink.ErrClosed whichever the client.
func NewErrClosed(pkg string) error { return &closedError{text: pkg + ": the producer is closed"} }

// closedError is a backend's ErrClosed sentinel.
type closedError struct{ text string }

func (e *closedError) Error() string { return e.text }

// Is reports whether target is ErrClosed.
func (e *closedError) Is(target error) bool { return target == ErrClosed }
