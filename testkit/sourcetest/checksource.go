package sourcetest

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
)

// CheckedSource is a sluice.Source that runs another one with its Group
// wrapped in a [CheckingGroup], so that every breach of the Source
// contract is recorded. It runs once, as any source does.
type CheckedSource struct {
	src sluice.Source

	mu sync.Mutex
	cg *CheckingGroup
}

// Check wraps src. Pass the result to pipeline.Run (or testkit.Start) and
// read Violations, or call Verify, once Run returned.
func Check(src sluice.Source) *CheckedSource { return &CheckedSource{src: src} }

// Run implements sluice.Source: it runs the wrapped source with g
// wrapped in a CheckingGroup and tells the checker when it returned.
func (s *CheckedSource) Run(ctx context.Context, g sluice.Group) error {
	cg := NewCheckingGroup(g)
	s.mu.Lock()
	s.cg = cg
	s.mu.Unlock()
	err := s.src.Run(ctx, cg)
	cg.Returned(ctx.Err() != nil)
	return err
}

// Group returns the checking group of the running (or finished) source,
// nil before Run was called.
func (s *CheckedSource) Group() *CheckingGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cg
}

// Violations returns the breaches seen so far (none before Run).
func (s *CheckedSource) Violations() []Violation {
	if cg := s.Group(); cg != nil {
		return cg.Violations()
	}
	return nil
}

// Counts returns what the checking group saw so far (zero before Run).
func (s *CheckedSource) Counts() Counts {
	if cg := s.Group(); cg != nil {
		return cg.Counts()
	}
	return Counts{}
}

// Owned returns the partitions the source holds now (none before Run).
func (s *CheckedSource) Owned() []sluice.TopicPartition {
	if cg := s.Group(); cg != nil {
		return cg.Owned()
	}
	return nil
}

// Paused returns the partitions paused now (see [CheckingGroup.Paused]).
func (s *CheckedSource) Paused() []sluice.TopicPartition {
	if cg := s.Group(); cg != nil {
		return cg.Paused()
	}
	return nil
}

// Verify fails t with one error per violation seen so far (call it once
// the source's Run returned, to see them all), and fails it when Run was
// never called.
func (s *CheckedSource) Verify(t testing.TB) {
	t.Helper()
	verify(t, s.Group() != nil, s.Violations())
}
