package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Option configures [Run]. Options are applied in order; an invalid value
// makes Run return an error naming the option before anything starts.
type Option func(*config)

type config struct {
	drainTimeout   time.Duration
	maxInFlight    int
	maxBytes       int64
	partitionQueue int
	chunk          int
	deadLetter     func(context.Context, DeadLetter) error
	logger         *slog.Logger
	observers      []Observer
	retry          RetryPolicy
	stuck          time.Duration
	dlLimit        DeadLetterLimit
	errs           []error
}

const (
	// DefaultDrainTimeout is how long a revoked partition may take to drain.
	DefaultDrainTimeout = 20 * time.Second
	// DefaultMaxInFlight bounds records delivered but not yet committable,
	// across all partitions.
	DefaultMaxInFlight = 100_000
	// DefaultMaxInFlightBytes bounds the key and value bytes of those
	// records.
	DefaultMaxInFlightBytes = 256 << 20
	// DefaultPartitionQueue is how many records one partition may hold
	// before it is paused.
	DefaultPartitionQueue = 4096
)

func defaultConfig() config {
	return config{
		drainTimeout:   DefaultDrainTimeout,
		maxInFlight:    DefaultMaxInFlight,
		maxBytes:       DefaultMaxInFlightBytes,
		partitionQueue: DefaultPartitionQueue,
		chunk:          256,
		retry:          DefaultRetry,
		logger:         slog.New(slog.DiscardHandler),
	}
}

func (c *config) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("sluice: "+format, args...))
}

// WithDrainTimeout sets how long a revoked partition's graph may take to
// finish its in-flight records (default 20 s). Keep it well below the
// source's poll interval limit (Kafka's max.poll.interval.ms): the poll loop
// waits for the drain. After the timeout the partition context is cancelled
// and only what finished is committed.
func WithDrainTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.bad("WithDrainTimeout(%v): the drain timeout must be positive", d)
		}
		c.drainTimeout = d
	}
}

// WithMaxInFlight caps the records in flight (admitted into the graphs
// and not yet committable) across all partitions (default 100,000),
// whatever the number of partitions: they never exceed records. A
// delivery that does not fit is admitted only in part; the rest waits,
// first come first served across partitions, and is admitted as records
// complete, while its partition is paused. Besides the records in flight,
// what waits is at most what each partition delivered before its pause
// took effect (one Deliver call: at most 128 records from the Kafka
// source). Paused partitions resume in turn: only as many at once as the
// free budget has room for one delivery each. See docs/lifecycle.md,
// "Backpressure".
func WithMaxInFlight(records int) Option {
	return func(c *config) {
		if records <= 0 {
			c.bad("WithMaxInFlight(%d): the limit must be positive", records)
		}
		c.maxInFlight = records
	}
}

// WithMaxInFlightBytes caps the key and value bytes of the records in
// flight across all partitions (default 256 MiB), like [WithMaxInFlight]:
// they never exceed n, except that a record heavier than n is admitted
// alone once no bytes are in flight.
func WithMaxInFlightBytes(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.bad("WithMaxInFlightBytes(%d): the limit must be positive", n)
		}
		c.maxBytes = n
	}
}

// WithPartitionQueue sets how many records one partition may hold
// (admitted, not yet committable) before the source pauses it (default
// 4096). The delivery that reaches the limit is admitted whole, so a
// partition holds at most records plus one delivery, minus one. It resumes
// when half of them completed (and the global budget has room, see
// [WithMaxInFlight]).
func WithPartitionQueue(records int) Option {
	return func(c *config) {
		if records <= 0 {
			c.bad("WithPartitionQueue(%d): the limit must be positive", records)
		}
		c.partitionQueue = records
	}
}

// WithDeadLetter sets where records marked with [Invalid] go. fn is called
// on the partition's dead-letter goroutine (one per partition), not on the
// stage that found the record invalid, which goes on meanwhile. Within a
// partition, calls come one record at a time and in offset order: a record
// is handed over once every record before it finished or was found invalid
// itself, so a record that a later stage finds invalid at a lower offset
// still goes first (a slow record holds back the dead letters after it,
// which could not be committed before it anyway). Calls for different
// partitions may overlap. ctx is the partition's context.
//
// The record's offset counts as done only when fn returned nil. A failed
// call is retried under the [WithRetry] policy (a [Permanent] error or a
// panic is not); when it still fails, Run stops with a *StageError
// wrapping [ErrNotDeadLettered] and naming the record. A revoke or a
// shutdown interrupts the retries: the record and the dead letters queued
// after it stay uncommitted (the partition's next owner handles them),
// and at shutdown Run returns that error, naming them, so nothing is
// dropped silently.
func WithDeadLetter(fn func(ctx context.Context, dl DeadLetter) error) Option {
	return func(c *config) {
		if fn == nil {
			c.bad("WithDeadLetter(nil): pass a function")
		}
		c.deadLetter = fn
	}
}

// WithLogger sets the logger for assignment, revocation, drain and errors
// (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.bad("WithLogger(nil): pass a logger")
			return
		}
		c.logger = l
	}
}

// DeadLetter is one record found invalid, as handed to the function set
// with [WithDeadLetter].
type DeadLetter struct {
	Record Record // the original record, untouched
	Stage  string // the stage that reported it
	Err    error  // the error passed to Invalid
}

// WithObserver adds an observer of Run's events (metrics, health). It may
// be given several times; observers are called in order.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o == nil {
			c.bad("WithObserver(nil): pass an observer")
			return
		}
		c.observers = append(c.observers, o)
	}
}
