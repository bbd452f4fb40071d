package pipeline

import (
	"time"

	"github.com/sluice-go/sluice/internal/engine"
)

// RetryPolicy says how a stage retries a transient error: a struct with
// the fields Attempts (int), Initial and Max (time.Duration). A failing
// call is made up to Attempts times in all, waiting Initial before the
// first retry and doubling up to Max, each delay jittered to a random
// value between half and all of it. Zero fields take the defaults of
// [DefaultRetry]; Attempts 1 disables retries. Negative values, or Initial
// above Max, are an error naming the option that got them.
type RetryPolicy = engine.RetryPolicy

// DefaultRetry is the policy of every stage unless [WithRetry] or the
// stage's own option changes it: about 80 s of retries, enough to ride out
// a database restart, before the error stops Run. Run reads it when it
// starts.
var DefaultRetry = RetryPolicy{Attempts: 10, Initial: 100 * time.Millisecond, Max: 30 * time.Second}

// WithRetry sets the retry policy of every stage that does not set its
// own, and of dead-letter deliveries (default [DefaultRetry]).
func WithRetry(p RetryPolicy) Option {
	return func(c *config) {
		rp, err := engine.ResolveRetry(p, DefaultRetry)
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
