package metrics

import (
	"fmt"
	"time"
)

// Defaults of [NewHealth].
const (
	// DefaultPollTimeout is how old the last poll may be for the consumer
	// to count as live.
	DefaultPollTimeout = 30 * time.Second
	// DefaultStartupGrace is how long after NewHealth the consumer counts
	// as live without having polled.
	DefaultStartupGrace = 30 * time.Second
)

// HealthOption configures [NewHealth]. Options are applied in order; an
// invalid value makes NewHealth return an error naming the option.
type HealthOption func(*healthConfig)

type healthConfig struct {
	now         func() time.Time
	pollTimeout time.Duration
	grace       time.Duration
	errs        []error
}

func (c *healthConfig) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("metrics.NewHealth: "+format, args...))
}

// WithPollTimeout sets how old the last poll may be for [Health.Live] to
// pass (default [DefaultPollTimeout]). It must be positive.
func WithPollTimeout(d time.Duration) HealthOption {
	return positive("WithPollTimeout", "timeout", d, func(c *healthConfig) *time.Duration { return &c.pollTimeout })
}

// WithStartupGrace sets how long after NewHealth [Health.Live] passes
// before the first poll (default [DefaultStartupGrace]). It must be
// positive.
func WithStartupGrace(d time.Duration) HealthOption {
	return positive("WithStartupGrace", "grace", d, func(c *healthConfig) *time.Duration { return &c.grace })
}

// positive is the option named name that sets the duration field returns
// to d, or records an error (calling the value what) when d is not
// positive.
func positive(name, what string, d time.Duration, field func(*healthConfig) *time.Duration) HealthOption {
	return func(c *healthConfig) {
		if d <= 0 {
			c.bad("%s(%v): the %s must be positive", name, d, what)
			return
		}
		*field(c) = d
	}
}

// WithHealthClock sets the clock Health compares poll times with (default
// time.Now), so tests need no sleeps. It must not be nil.
func WithHealthClock(now func() time.Time) HealthOption {
	return func(c *healthConfig) {
		if now == nil {
			c.bad("WithHealthClock(nil): pass a clock such as time.Now")
			return
		}
		c.now = now
	}
}
