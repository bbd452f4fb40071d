// Package enginetest holds the small fixtures the runtime's tests share
// across packages (pipeline, stages, internal/engine, metrics): a Source
// whose poll loop is the test's own function, a stage function that
// fails with Invalid for values that are not numbers, and the loop of the
// runtime's benchmarks (BenchCommitted).
package enginetest

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice"
)

// SourceFunc is a Source whose poll loop is the test's own script, to
// drive the Group step by step: Run calls f.
type SourceFunc func(ctx context.Context, g sluice.Group) error

// Run calls f(ctx, g).
func (f SourceFunc) Run(ctx context.Context, g sluice.Group) error { return f(ctx, g) }

// ParseInt parses r's value as a decimal integer; a value that is not a
// number fails with sluice.Invalid (the record is dead-lettered).
func ParseInt(_ context.Context, r sluice.Record) (int, error) {
	var n int
	if _, err := fmt.Sscan(string(r.Value), &n); err != nil {
		return 0, sluice.Invalid(fmt.Errorf("not a number: %q", r.Value))
	}
	return n, nil
}
