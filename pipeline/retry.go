package pipeline

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// WithRetry sets the retry policy of every stage that does not set its
// own, and of dead-letter deliveries (default [sluice.DefaultRetry]); its zero
// fields take DefaultRetry's values. A policy whose MaxBackoff is longer
// than the drain timeout ([WithDrainTimeout]) is accepted, with a warning
// at Run's start naming both (retry_backoff, drain_timeout).
func WithRetry(p sluice.RetryPolicy) Option {
	return func(c *config) {
		rp, err := engine.ResolveRetry(p, sluice.DefaultRetry())
		if err != nil {
			c.bad("WithRetry(%+v): %v", p, err)
		}
		c.Retry = rp
	}
}
