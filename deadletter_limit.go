package sluice

import "errors"

// DeadLetterLimit stops Run (set with pipeline.WithDeadLetterLimit) when a
// partition produces too much bad input, which usually means a bug or a
// schema change rather than a few bad records. Zero fields disable their
// check.
type DeadLetterLimit struct {
	// MaxConsecutive is the most invalid records in a row (by offset) a
	// partition may have; one more stops Run.
	MaxConsecutive int
	// MaxRatio is the highest share (0 to 1) of invalid records among the
	// last Window records of a partition; a higher share stops Run. It is
	// checked once the partition completed Window records. A value outside
	// [0, 1], NaN or an infinity makes Run return an error naming it.
	MaxRatio float64
	// Window is the number of records MaxRatio looks at (default 1000);
	// setting it without MaxRatio is an error.
	Window int
}

// ErrDeadLetterLimit is wrapped by the error that stops Run when a
// [DeadLetterLimit] tripped.
var ErrDeadLetterLimit = errors.New("dead-letter limit exceeded")
