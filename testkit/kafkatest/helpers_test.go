package kafkatest

import (
	"context"
	"testing"
	"time"
)

// minuteContext returns a context that ends a minute from now, or when
// the test ends.
func minuteContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
