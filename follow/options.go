package follow

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
)

const (
	// DefaultInterval is how often the follower reads the leaders'
	// committed offsets unless [WithInterval] says otherwise.
	DefaultInterval = 500 * time.Millisecond
	// DefaultRequestTimeout bounds one Leaders.Committed call unless
	// [WithRequestTimeout] says otherwise.
	DefaultRequestTimeout = 10 * time.Second
)

// Option configures [New]. An invalid option makes New return an error
// naming it.
type Option func(*config)

type config struct {
	interval, timeout time.Duration
	log               *slog.Logger
	hooks             []Hook
	errs              []error
}

func defaultConfig() config {
	return config{interval: DefaultInterval, timeout: DefaultRequestTimeout, log: slog.New(slog.DiscardHandler)}
}

// WithInterval sets how often the leaders' committed offsets are read (one
// Leaders.Committed call for every owned partition). It bounds how long a
// record the leaders have committed waits before the follower processes
// it, and is the load the follower puts on the group coordinators. It must
// be at least 1ms; the default is [DefaultInterval].
func WithInterval(d time.Duration) Option {
	return atLeastMillisecond("WithInterval", d, func(c *config) *time.Duration { return &c.interval })
}

// WithRequestTimeout bounds one Leaders.Committed call; a call past it is
// a failed read (logged, retried at the next interval). It must be at least
// 1ms; the default is [DefaultRequestTimeout].
func WithRequestTimeout(d time.Duration) Option {
	return atLeastMillisecond("WithRequestTimeout", d, func(c *config) *time.Duration { return &c.timeout })
}

// atLeastMillisecond is the option named name that sets the duration
// field returns to d, or records an error when d is under 1ms.
func atLeastMillisecond(name string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.errs = append(c.errs, fmt.Errorf("follow: %s(%v): must be at least 1ms", name, d))
			return
		}
		*field(c) = d
	}
}

// WithLogger sets where the follower logs failed reads of the leaders'
// offsets (a warning at the first failure, debug while they go on, info
// when reads work again). The default discards them; nil is an error.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.errs = append(c.errs, fmt.Errorf("follow: WithLogger(nil): pass a logger (slog.New(slog.DiscardHandler) discards)"))
			return
		}
		c.log = l.With("component", "sluice/follow")
	}
}

// WithHook adds a hook told how far each partition is held back and how
// far behind its leaders it is
// (metrics.Metrics is one). Hooks are called in the order given; nil is an
// error.
func WithHook(h Hook) Option {
	return func(c *config) {
		if h == nil {
			c.errs = append(c.errs, fmt.Errorf("follow: WithHook(nil): pass a hook"))
			return
		}
		c.hooks = append(c.hooks, h)
	}
}

// Hook observes what the follower holds back.
//
// OnFollowerStatus is called on the source's poll goroutine (the one
// calling the runtime's Group), never concurrently, whenever one of a
// partition's Status fields changed: when the partition is assigned, when
// a read of the leaders' offsets changed its Leaders, when records were
// held, released or handed on (Lag moved: at most once per Deliver of
// the source), and once with Owned false when the partition is
// revoked, lost or the consumer shuts down (its held records were
// dropped). It must be cheap and must not block: the source polls
// nothing while it runs.
type Hook interface {
	OnFollowerStatus(Status)
}

// Status is what the follower knows of one partition it owns.
type Status struct {
	sluice.TopicPartition

	// Leaders is the lowest committed offset of the leader groups as last
	// read: records below it may be processed. -1 before the first read,
	// and while some leader group has committed nothing for the partition.
	Leaders int64

	// Held is the number of records the source delivered and the follower
	// holds back because the leaders have not committed past them: the
	// follower is blocked by its leaders while it is above zero. The
	// source keeps the partition paused meanwhile, so Held is at most
	// what the source had fetched when it paused (a few batches), not the
	// leaders' distance to the end of the partition.
	Held int

	// Lag is how far the follower is behind its leaders on the partition,
	// in offsets: Leaders minus the follower's position, the offset of the
	// next record it has not handed to the runtime yet (the first held
	// record, else one past the last record handed on since the
	// assignment). Records handed on but still in the runtime's queues do
	// not count: they passed the follower (sluice_inflight_records counts
	// them). It counts offsets, as consumer lag
	// does, so offsets without a record (transaction markers, compacted
	// records) count too. It is 0 while the follower waits at the leaders'
	// offset, and never negative: a position past the leaders (their
	// offsets reset backwards, or a gap the leaders committed into) is 0.
	// It is -1 while unknown: while Leaders is -1, and after an assignment
	// until the first record of the partition reaches the follower (a
	// follower with nothing to read since it was assigned shows -1, not 0).
	// It changes with every delivery, so a Status is reported at most once
	// per Deliver of the source, not per record.
	Lag int64

	// Owned is false in the last status of an ownership: the partition
	// left the follower (Held is 0, Lag is -1; nothing held was
	// delivered).
	Owned bool
}
