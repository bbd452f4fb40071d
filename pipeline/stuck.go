package pipeline

import "time"

// MinStuckThreshold is the smallest threshold [WithStuckThreshold]
// accepts: the detector samples every quarter threshold.
const MinStuckThreshold = time.Millisecond

// WithStuckThreshold turns on the stuck detector: when one value has been in
// one stage's user function for longer than d, Run logs a warning naming the
// stage, the partition, the offset and how long (stuck_for), once per value,
// and reports it to hooks ([sluice.HookStuck]); every goroutine's stack
// (kilobytes each) follows in a line of its own at debug level, taken only
// when the logger enables debug. Off by default. d below [MinStuckThreshold]
// makes Run return an error naming the option and the value.
func WithStuckThreshold(d time.Duration) Option {
	return func(c *config) {
		if d < MinStuckThreshold {
			c.bad("WithStuckThreshold(%v): the threshold must be at least %v", d, MinStuckThreshold)
		}
		c.Stuck = d
	}
}
