package franz

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/sluice-go/sluice"
)

// offsetsSeen records, by partition, the offsets a graph processed, in
// the order its stages saw them. It is safe for concurrent use.
type offsetsSeen struct {
	mu  sync.Mutex
	got map[int32][]int64
}

// add records r's offset.
func (s *offsetsSeen) add(r sluice.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[int32][]int64{}
	}
	s.got[r.Partition] = append(s.got[r.Partition], r.Offset)
}

// byPartition returns a copy of what was recorded.
func (s *offsetsSeen) byPartition() map[int32][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32][]int64, len(s.got))
	for p, offs := range maps.All(s.got) {
		out[p] = slices.Clone(offs)
	}
	return out
}

// gate holds records: pass signals entered (without waiting for a
// reader) and returns once release is closed, or with the cause of ctx's
// end (a revoke's drain timeout, a loss, the Run's end).
type gate struct{ entered, release chan struct{} }

func newGate() *gate { return &gate{entered: make(chan struct{}, 1), release: make(chan struct{})} }

func (g *gate) pass(ctx context.Context) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
