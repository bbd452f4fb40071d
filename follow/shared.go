package follow

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice"
)

// shared is what the poll goroutine (the wrapped group) and the leaders'
// poller exchange: the partitions owned, the leaders' offsets last read,
// and the follower's Wake.
type shared struct {
	wake chan struct{} // the Wake the source sees; capacity one
	kick chan struct{} // asks the poller for a read now; capacity one

	// version counts the changes of leaders, so that the poll goroutine
	// reads the map only when it changed.
	version atomic.Uint64

	mu      sync.Mutex
	owned   map[sluice.TopicPartition]bool
	order   []sluice.TopicPartition // owned, in assignment order
	leaders map[sluice.TopicPartition]int64
}

func newShared() *shared {
	return &shared{
		wake:    make(chan struct{}, 1),
		kick:    make(chan struct{}, 1),
		owned:   make(map[sluice.TopicPartition]bool),
		leaders: make(map[sluice.TopicPartition]int64),
	}
}

// own adds tps to the partitions read and asks for a read now.
func (s *shared) own(tps []sluice.TopicPartition) {
	s.mu.Lock()
	for _, tp := range tps {
		if !s.owned[tp] {
			s.owned[tp] = true
			s.order = append(s.order, tp)
		}
	}
	s.mu.Unlock()
	signal(s.kick)
}

// disown removes tps and forgets their offsets: a partition owned again
// later waits for a fresh read.
func (s *shared) disown(tps []sluice.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		delete(s.owned, tp)
		delete(s.leaders, tp)
	}
	s.order = slices.DeleteFunc(s.order, func(tp sluice.TopicPartition) bool { return !s.owned[tp] })
}

// ownedList returns the partitions owned now, in assignment order.
func (s *shared) ownedList() []sluice.TopicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sluice.TopicPartition(nil), s.order...)
}

// update stores a read of the partitions asked (those still owned; a
// partition absent from m or negative has nothing committed: -1) and
// signals wake when an offset changed.
func (s *shared) update(asked []sluice.TopicPartition, m map[sluice.TopicPartition]int64) {
	changed := false
	s.mu.Lock()
	for _, tp := range asked {
		if !s.owned[tp] {
			continue
		}
		v, ok := m[tp]
		if !ok || v < 0 {
			v = -1
		}
		if old, ok := s.leaders[tp]; !ok || old != v {
			s.leaders[tp] = v
			changed = true
		}
	}
	s.mu.Unlock()
	if changed {
		s.version.Add(1)
		signal(s.wake)
	}
}

// offset returns tp's leaders' offset as last read, -1 when none.
// Callers hold mu.
func (s *shared) offset(tp sluice.TopicPartition) int64 {
	if v, ok := s.leaders[tp]; ok {
		return v
	}
	return -1
}
