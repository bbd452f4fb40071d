package exactlyonce

import (
	"errors"
	"sync"
)

// Binding is what a transactional producer constructor hands to the
// source it is bound to: the backend's producer P (for librdkafka a
// *kafka.Producer, for franz-go its *franz.Producer), its transactional
// id (for the source's errors) and the Group's configuration.
type Binding[P any] struct {
	Producer        P
	TransactionalID string
	Config          Config
}

// ErrAlreadyBound is returned by [Slot.Bind] for a source that has a
// transactional producer already.
var ErrAlreadyBound = errors.New("the source has a transactional producer already")

// ErrRunStarted is returned by [Slot.Bind] once the source's Run took the
// slot: a producer bound later would never be used.
var ErrRunStarted = errors.New("the source's Run has started; bind the producer before it")

// Slot holds the transactional producer bound to one source: it is a
// field of the source, so the binding lives and dies with it. The zero
// Slot is empty. Its methods are safe for concurrent use.
type Slot[P any] struct {
	mu    sync.Mutex
	b     *Binding[P]
	taken bool // Take was called: Bind fails from now on
}

// Bind binds b. It fails with ErrAlreadyBound if the slot holds a
// binding, with ErrRunStarted once Take was called.
func (s *Slot[P]) Bind(b Binding[P]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.taken:
		return ErrRunStarted
	case s.b != nil:
		return ErrAlreadyBound
	}
	s.b = &b
	return nil
}

// Take returns the binding, empties the slot and closes it to later
// binds (a source's Run calls it once, first thing, whether or not it
// goes on to run): ok is false when the source runs without transactions.
func (s *Slot[P]) Take() (b Binding[P], ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken = true
	p := s.b
	s.b = nil
	if p == nil {
		return Binding[P]{}, false
	}
	return *p, true
}
