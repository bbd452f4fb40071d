package engine

import (
	"context"
	"log/slog"
	"time"
)

// Config is what one [Run] is configured with. Package pipeline fills it
// from its options, which validate every value and set every default: the
// engine takes it as it is and never changes it. Zero fields of
// DeadLetterLimit disable their checks; every other field must be set.
type Config struct {
	// DrainTimeout bounds one graceful drain (a revoke or the shutdown).
	// Half of it is what a graph may hold at its measured completion rate
	// (pace.go); a quarter (at least 1 s), the exit grace (abandon.go).
	DrainTimeout time.Duration
	// MaxInFlight and MaxInFlightBytes cap the records (and their key and
	// value bytes) admitted into graphs and not yet committable, across
	// all partitions (see backpressure.go).
	MaxInFlight      int
	MaxInFlightBytes int64
	// PartitionQueue is how many records one partition may hold before it
	// is paused.
	PartitionQueue int
	// Chunk is the most values in one chunk on an edge.
	Chunk int
	// DeadLetter receives the records found invalid; nil makes an invalid
	// record a fatal error (ErrNoDeadLetter).
	DeadLetter func(context.Context, DeadLetter) error
	// Logger gets assignment, revoke, drain and error lines; never nil.
	Logger *slog.Logger
	// Hooks are called for the events they handle (see hooks.go), in
	// order; package pipeline checked that each handles some.
	Hooks []Hook
	// Retry is the policy of stages without their own and of dead-letter
	// deliveries, with its defaults filled in.
	Retry RetryPolicy
	// DefaultRetry fills the zero fields of a stage's own policy
	// (StageSpec.Retry).
	DefaultRetry RetryPolicy
	// Stuck is the stuck detector's threshold; 0 turns it off.
	Stuck time.Duration
	// DeadLetterLimit stops Run on too much bad input per partition.
	DeadLetterLimit DeadLetterLimit
}
