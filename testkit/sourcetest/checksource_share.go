package sourcetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
)

// CheckedShareSource is a share group source run with its Group wrapped
// in a [CheckingAckGroup], so that every breach of the share contract is
// recorded. It runs once, as any source does.
type CheckedShareSource struct {
	src sluice.Source
	run runGroup[*CheckingAckGroup]
}

// CheckShare wraps src, a share group source. Pass the result to
// pipeline.Run (or testkit.Start) and read Violations, or call Verify,
// once Run returned.
func CheckShare(src sluice.Source) *CheckedShareSource { return &CheckedShareSource{src: src} }

// Run implements sluice.Source: it runs the wrapped source with g wrapped
// in a CheckingAckGroup and tells the checker when it returned. g must be
// a sluice.AckGroup (pipeline.Run's is); anything else is an error.
func (s *CheckedShareSource) Run(ctx context.Context, g sluice.Group) error {
	ag, ok := g.(sluice.AckGroup)
	if !ok {
		return fmt.Errorf("sourcetest: a share source needs the Group of pipeline.Run (a sluice.AckGroup), got %T", g)
	}
	return s.run.runWith(ctx, s.src, NewCheckingAckGroup(ag))
}

// Group returns the checking group of the running (or finished) source,
// nil before Run was called.
func (s *CheckedShareSource) Group() *CheckingAckGroup { return s.run.get() }

// Violations returns the breaches seen so far (none before Run).
func (s *CheckedShareSource) Violations() []Violation { return s.run.violations() }

// Verify fails t with one error per violation seen so far (call it once
// the source's Run returned, to see them all), and fails it when Run was
// never called.
func (s *CheckedShareSource) Verify(t testing.TB) {
	t.Helper()
	s.run.verify(t)
}
