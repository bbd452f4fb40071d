package engine

import "slices"

// fifo is a first-in, first-out queue on one slice: pop moves a head
// index, and the popped prefix is dropped once it is at least half of the
// slice, so that push and pop are O(1) amortized and the slice does not
// grow without bound under a steady flow. The zero value is empty. Not
// safe for concurrent use.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(v T) { f.items = append(f.items, v) }

// queued returns the items not popped yet, oldest first. The slice is
// the queue's own: valid until the next change.
func (f *fifo[T]) queued() []T { return f.items[f.head:] }

// insert puts v at position i among the queued items (0 is the oldest).
func (f *fifo[T]) insert(i int, v T) { f.items = slices.Insert(f.items, f.head+i, v) }

// drain removes and returns every queued item.
func (f *fifo[T]) drain() []T {
	left := slices.Clone(f.queued())
	f.items, f.head = nil, 0
	return left
}

// pop removes and returns the oldest item; false when empty.
func (f *fifo[T]) pop() (T, bool) {
	var zero T
	if f.head == len(f.items) {
		return zero, false
	}
	v := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
	case f.head >= 64 && f.head >= len(f.items)/2:
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return v, true
}
