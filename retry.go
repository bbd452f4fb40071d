package sluice

import "time"

// RetryPolicy says how a stage retries a transient error. A failing call
// is made up to Attempts times in all, waiting Initial before the first
// retry and doubling up to Max, each delay jittered to a random value
// between half and all of it. Zero fields take the values of
// [DefaultRetry] (for a stage's own policy too, whatever
// pipeline.WithRetry set), except that a zero Max below Initial takes
// Initial; Attempts 1 disables retries. Negative values, or Initial above
// Max, are an error naming the option and the field.
//
// Each retry logs a warning (stage, topic, partition, offset, "attempt
// n/N", delay, error) on Run's logger (a burst of 10 per stage and
// partition, then one a second; the next line logged counts those left
// out as unlogged_retries); when the attempts are used up, the error Run
// returns ends with "(failed after N attempts; ...)" and suggests
// [Invalid] for input that can never succeed and [Permanent] to stop
// without retrying.
type RetryPolicy struct {
	Attempts int           // calls in all, the first included
	Initial  time.Duration // the delay before the first retry
	Max      time.Duration // the longest delay
}

// The default retry policy, see [DefaultRetry].
const (
	defaultAttempts = 8
	defaultInitial  = 100 * time.Millisecond
	defaultMax      = 5 * time.Second
)

// DefaultRetry returns the policy of every stage and of dead-letter
// deliveries unless pipeline.WithRetry or the stage's own option changes
// it: 8 attempts, waiting 100 ms before the first retry and doubling up to
// 5 s. Its delays add up to 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 3.2 + 5 = 11.3 s
// ([RetryPolicy.MaxBackoff]); jittered, a value that keeps failing waits
// between 5.65 s and 11.3 s in all before its error stops Run. That is
// shorter than the default drain timeout (pipeline.DefaultDrainTimeout,
// 20 s), so a revoke that comes during the retries still drains in time.
// It is a function, not a variable: the default cannot be changed for
// every Run of the program; use pipeline.WithRetry.
func DefaultRetry() RetryPolicy {
	return RetryPolicy{Attempts: defaultAttempts, Initial: defaultInitial, Max: defaultMax}
}

// MaxBackoff returns the sum of the delays before every retry, before
// jitter: the longest one value waits in all between its first and its
// last call (the calls' own time aside), before its error stops Run. With
// jitter the waits add up to between half of it and all of it. p must
// have no zero fields (Run fills them from [DefaultRetry]).
func (p RetryPolicy) MaxBackoff() time.Duration {
	var sum time.Duration
	for attempt := 1; attempt < p.Attempts; attempt++ {
		sum += p.Backoff(attempt)
	}
	return sum
}

// Backoff returns the delay before retry number attempt (from 1), before
// jitter: Initial doubled attempt-1 times, at most Max.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d := p.Initial
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Permanent marks err as not worth retrying: the stage fails at once (Run
// stops). Errors marked with [Invalid] and panics are never retried either.
// Permanent(nil) is nil. The returned error wraps err and has its text.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or any error it wraps) was marked with
// [Permanent].
func IsPermanent(err error) bool { return wraps[*permanentError](err) }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
