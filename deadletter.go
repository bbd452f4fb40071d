package sluice

import (
	"context"
	"errors"
)

// DeadLetter is one record found invalid, as handed to the dead-letter
// destination (the function set with pipeline.WithDeadLetter).
type DeadLetter struct {
	Record Record // the original record, untouched
	Stage  string // the name of the stage that reported it
	Err    error  // the error passed to Invalid
}

// StartChecker is implemented by a dead-letter destination that can tell,
// before Run consumes anything, that it would fail: the Kafka producers'
// DeadLetter checks that its topic exists. Run calls CheckStart once, with
// its own context, before the source starts; a non-nil error is returned
// by Run as it is (nothing else started). An error that only means the
// check could not be made (the cluster did not answer in time) should be
// logged and nil returned, so that a consumer starting while its cluster
// is briefly unreachable is not refused.
type StartChecker interface {
	CheckStart(ctx context.Context) error
}

// ErrNoDeadLetter is wrapped by the error that stops Run when a stage
// reports invalid input (see [Invalid]) and no dead-letter destination was
// configured with pipeline.WithDeadLetter.
var ErrNoDeadLetter = errors.New("invalid record and no dead-letter destination configured (use pipeline.WithDeadLetter)")

// ErrNotDeadLettered is wrapped by the error that stops Run when records
// found invalid could not be handed to the dead-letter destination: the
// function set with pipeline.WithDeadLetter kept failing, panicked, or Run
// shut down while it was still failing. The error is a *[StageError]
// naming the first such record; those records stay uncommitted, so
// whoever owns the partition next processes them again.
var ErrNotDeadLettered = errors.New("records not dead-lettered")
