// Package sizeclass keeps free objects (chunks, buffers) in power-of-two
// capacity classes, for the runtime's edge chunks (internal/engine) and
// Pool's chunks (stages): class k holds objects whose capacity is at least
// 1<<k and below 1<<(k+1), and a request for n values takes a free object
// of the smallest class at or above n's that has one.
package sizeclass

import "math/bits"

// Classes is the number of capacity classes.
const Classes = bits.UintSize

// For is the class whose objects hold at least n values (n >= 1; below 1
// counts as 1). A new object for n gets capacity 1<<For(n).
func For(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// OfCap is the class of an object of capacity c >= 1: the largest k with
// 1<<k <= c.
func OfCap(c int) int { return bits.Len(uint(c)) - 1 }

// Lists are free objects by class. They are not safe for concurrent use:
// the caller's lock guards them.
type Lists[T any] struct {
	free [Classes][]T
	set  uint // bit k when free[k] holds an object
}

// Take removes and returns an object of the smallest class from k up
// that has one (the last given back of that class); ok is false when no
// class from k up has one. Taking a larger object than asked matters:
// objects given back larger than they were handed out (a stage appended
// past the capacity) would otherwise pile up unused while new ones are
// made.
func (l *Lists[T]) Take(k int) (v T, ok bool) {
	m := l.set >> k << k
	if m == 0 {
		return v, false
	}
	k = bits.TrailingZeros(m)
	free := l.free[k]
	v = free[len(free)-1]
	var zero T
	free[len(free)-1] = zero
	l.free[k] = free[:len(free)-1]
	if len(free) == 1 {
		l.set &^= 1 << k
	}
	return v, true
}

// Put adds v to class k (k = OfCap of v's capacity).
func (l *Lists[T]) Put(k int, v T) {
	l.free[k] = append(l.free[k], v)
	l.set |= 1 << k
}

// Len returns how many objects class k holds.
func (l *Lists[T]) Len(k int) int { return len(l.free[k]) }

// Clear drops every object, keeping the lists' arrays for reuse.
func (l *Lists[T]) Clear() {
	for k, free := range l.free {
		clear(free)
		l.free[k] = free[:0]
	}
	l.set = 0
}
