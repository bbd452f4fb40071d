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
	run runGroup[*CheckingGroup]
}

// Check wraps src. Pass the result to pipeline.Run (or testkit.Start) and
// read Violations, or call Verify, once Run returned.
func Check(src sluice.Source) *CheckedSource { return &CheckedSource{src: src} }

// Run implements sluice.Source: it runs the wrapped source with g
// wrapped in a CheckingGroup and tells the checker when it returned.
func (s *CheckedSource) Run(ctx context.Context, g sluice.Group) error {
	return s.run.runWith(ctx, s.src, NewCheckingGroup(g))
}

// Group returns the checking group of the running (or finished) source,
// nil before Run was called.
func (s *CheckedSource) Group() *CheckingGroup { return s.run.get() }

// Violations returns the breaches seen so far (none before Run).
func (s *CheckedSource) Violations() []Violation { return s.run.violations() }

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
	s.run.verify(t)
}

// runGroup holds the checking group of a checked source's Run, nil
// before it.
type runGroup[G interface {
	comparable
	sluice.Group
	Violations() []Violation
	Returned(ctxDone bool)
}] struct {
	mu sync.Mutex
	g  G
}

func (r *runGroup[G]) set(g G) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.g = g
}

// runWith records g as the run's checking group, runs src with it and
// tells g once src's Run returned.
func (r *runGroup[G]) runWith(ctx context.Context, src sluice.Source, g G) error {
	r.set(g)
	err := src.Run(ctx, g)
	g.Returned(ctx.Err() != nil)
	return err
}

func (r *runGroup[G]) get() G {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.g
}

func (r *runGroup[G]) violations() []Violation {
	var none G
	if g := r.get(); g != none {
		return g.Violations()
	}
	return nil
}

// verify fails t with one error per violation, or when the checked source
// never ran.
func (r *runGroup[G]) verify(t testing.TB) {
	t.Helper()
	var none G
	if r.get() == none {
		t.Errorf("sourcetest: the checked source was never run")
		return
	}
	for _, v := range r.violations() {
		t.Error(v.Error())
	}
}
