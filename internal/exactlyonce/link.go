package exactlyonce

import (
	"errors"
	"sync"
)

// Binding is what a transactional producer constructor hands to the
// source it is bound to: the backend's producer client (for librdkafka a
// *kafka.Producer; the backend knows the type), its transactional id
// (for the source's errors) and the Group's configuration.
type Binding struct {
	Producer        any
	TransactionalID string
	Config          Config
}

// bindings maps a source (its pointer) to the transactional producer
// bound to it. A package-level registry lets the producing package
// (sink) bind to the consuming one (source) without either exporting a
// method only the other may call.
var bindings sync.Map

// ErrAlreadyBound is returned by [Bind] for a source that has a
// transactional producer already.
var ErrAlreadyBound = errors.New("the source has a transactional producer already")

// Bind binds b to src. It fails with ErrAlreadyBound if src has one.
func Bind(src any, b Binding) error {
	if _, loaded := bindings.LoadOrStore(src, b); loaded {
		return ErrAlreadyBound
	}
	return nil
}

// Take returns the binding of src and forgets it (a source's Run calls
// it once): ok is false when src runs without transactions.
func Take(src any) (b Binding, ok bool) {
	v, ok := bindings.LoadAndDelete(src)
	if !ok {
		return Binding{}, false
	}
	return v.(Binding), true
}
