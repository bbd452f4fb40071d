package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures [New]. Options are applied in order; an invalid value
// makes New return an error naming the option.
type Option func(*config)

type config struct {
	errs          []error // invalid options, for New to return
	now           func() time.Time
	stageBuckets  []float64
	commitBuckets []float64
	drainBuckets  []float64
	constLabels   prometheus.Labels
}

// DefaultStageBuckets are the upper bounds, in seconds, of
// sluice_stage_duration_seconds: 100 µs to 10 s.
var DefaultStageBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// DefaultCommitBuckets are the upper bounds, in seconds, of
// sluice_commit_duration_seconds: 1 ms to 10 s.
var DefaultCommitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// DefaultDrainBuckets are the upper bounds, in seconds, of
// sluice_partition_drain_duration_seconds: 1 ms to 60 s, covering the
// pipeline's default drain timeout (20 s).
var DefaultDrainBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60}

func defaultConfig() config {
	return config{
		now:           time.Now,
		stageBuckets:  DefaultStageBuckets,
		commitBuckets: DefaultCommitBuckets,
		drainBuckets:  DefaultDrainBuckets,
	}
}

// WithClock sets the clock used to measure how long partitions stay
// paused (default time.Now). Tests inject a fake clock. It must not be
// nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errs = append(c.errs, errors.New("metrics.New: WithClock(nil): pass a clock such as time.Now"))
			return
		}
		c.now = now
	}
}

// WithStageBuckets replaces [DefaultStageBuckets]. The bounds must be
// increasing (prometheus panics otherwise; New returns an error instead).
func WithStageBuckets(b []float64) Option { return func(c *config) { c.stageBuckets = b } }

// WithCommitBuckets replaces [DefaultCommitBuckets], like WithStageBuckets.
func WithCommitBuckets(b []float64) Option { return func(c *config) { c.commitBuckets = b } }

// WithDrainBuckets replaces [DefaultDrainBuckets], like WithStageBuckets.
func WithDrainBuckets(b []float64) Option { return func(c *config) { c.drainBuckets = b } }

// WithConstLabels adds labels with fixed values to every metric, for
// example {"pipeline": "billing"} to tell apart several consumers that
// register on one registry (each needs distinct values).
func WithConstLabels(l prometheus.Labels) Option {
	return func(c *config) { c.constLabels = l }
}
