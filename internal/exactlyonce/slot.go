package exactlyonce

import (
	"errors"
	"sync/atomic"
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

// Slot holds the transactional producer bound to one source: it is a
// field of the source, so the binding lives and dies with it. The zero
// Slot is empty. Its methods are safe for concurrent use.
type Slot[P any] struct {
	b atomic.Pointer[Binding[P]]
}

// Bind binds b. It fails with ErrAlreadyBound if the slot holds a
// binding.
func (s *Slot[P]) Bind(b Binding[P]) error {
	if !s.b.CompareAndSwap(nil, &b) {
		return ErrAlreadyBound
	}
	return nil
}

// Take returns the binding and empties the slot (a source's Run calls it
// once): ok is false when the source runs without transactions.
func (s *Slot[P]) Take() (b Binding[P], ok bool) {
	p := s.b.Swap(nil)
	if p == nil {
		return Binding[P]{}, false
	}
	return *p, true
}
