package pipeline

import "github.com/sluice-go/sluice/internal/engine"

// RetryPolicy says how a stage retries a transient error: a struct with
// the fields Attempts (int), Initial and Max (time.Duration). A failing
// call is made up to Attempts times in all, waiting Initial before the
// first retry and doubling up to Max, each delay jittered to a random
// value between half and all of it. Zero fields take the values of
// [DefaultRetry] (for a stage's own policy too, whatever [WithRetry] set),
// except that a zero Max below Initial takes Initial; Attempts 1 disables
// retries. Negative values, or Initial above Max, are
// an error naming the option and the field. Its MaxBackoff method returns
// the sum of the delays before jitter: the longest a failing value waits
// in all before its error stops Run.
//
// Each retry logs a warning (stage, topic, partition, offset, "attempt
// n/N", delay, error) on the [WithLogger] logger (a burst of 10 per stage
// and partition, then one a second; the next line logged counts those
// left out as unlogged_retries); when the attempts are
// used up, the error Run returns ends with "(failed after N attempts; ...)"
// and suggests [Invalid] for input that can never succeed and [Permanent]
// to stop without retrying.
type RetryPolicy = engine.RetryPolicy

// DefaultRetry returns the policy of every stage and of dead-letter
// deliveries unless [WithRetry] or the stage's own option changes it: 8
// attempts, waiting 100 ms before the first retry and doubling up to 5 s.
// Its delays add up to 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 3.2 + 5 = 11.3 s
// (MaxBackoff); jittered, a value that keeps failing waits between 5.65 s
// and 11.3 s in all before its error stops Run. That is shorter than
// [DefaultDrainTimeout] (20 s), so a revoke that comes during the retries
// still drains in time. It is a function, not a variable: the default
// cannot be changed for every Run of the program; use [WithRetry].
func DefaultRetry() RetryPolicy { return engine.DefaultRetry() }

// WithRetry sets the retry policy of every stage that does not set its
// own, and of dead-letter deliveries (default [DefaultRetry]); its zero
// fields take DefaultRetry's values. A policy whose MaxBackoff is longer
// than the drain timeout ([WithDrainTimeout]) is accepted, with a warning
// at Run's start naming both (retry_backoff, drain_timeout).
func WithRetry(p RetryPolicy) Option {
	return func(c *config) {
		rp, err := engine.ResolveRetry(p, engine.DefaultRetry())
		if err != nil {
			c.bad("WithRetry(%+v): %v", p, err)
		}
		c.Retry = rp
	}
}

// Permanent marks err as not worth retrying: the stage fails at once (Run
// stops). Errors marked with [Invalid] and panics are never retried either.
// Permanent(nil) is nil. The returned error wraps err and has its text.
func Permanent(err error) error { return engine.Permanent(err) }

// IsPermanent reports whether err (or any error it wraps) was marked with
// [Permanent].
func IsPermanent(err error) bool { return engine.IsPermanent(err) }
