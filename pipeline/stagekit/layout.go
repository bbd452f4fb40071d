package stagekit

import (
	"unsafe"

	"github.com/sluice-go/sluice/internal/engine"
)

// The engine moves values in chunks of engine.Item[T], whose Ticket field
// is an engine.Ticket; this package hands the same chunks to stages as
// []Item[T], whose Ticket is a [Ticket]. Go converts neither a slice nor a
// channel between two element types, so the functions below reinterpret
// them in place: a chunk is never copied, and converting one costs
// nothing. That is sound because the two element types have the same
// memory layout: Ticket is a struct of exactly one engine.Ticket, so both
// have the same size and alignment (checked at compile time below), hence
// Item[T] and engine.Item[T] (fields Value T, then the ticket) have the
// same size, alignment and field offsets for every T, and the same
// pointer words for the garbage collector (layout_test.go checks several
// T). This file is the only use of package unsafe here.

// Compile-time checks: each array length is a negative constant, which
// does not compile, unless the sizes (and alignments) are equal.
var (
	_ [unsafe.Sizeof(Ticket{}) - unsafe.Sizeof(engine.Ticket{})]struct{}
	_ [unsafe.Sizeof(engine.Ticket{}) - unsafe.Sizeof(Ticket{})]struct{}
	_ [unsafe.Alignof(Ticket{}) - unsafe.Alignof(engine.Ticket{})]struct{}
	_ [unsafe.Alignof(engine.Ticket{}) - unsafe.Alignof(Ticket{})]struct{}
)

// items is c as a chunk of this package's items, sharing c's array (nil
// for nil).
func items[T any](c []engine.Item[T]) []Item[T] {
	if cap(c) == 0 {
		return emptyAs[Item[T]](c == nil)
	}
	return unsafe.Slice((*Item[T])(unsafe.Pointer(unsafe.SliceData(c))), cap(c))[:len(c)]
}

// engineItems is c as a chunk of the engine's items, sharing c's array
// (nil for nil).
func engineItems[T any](c []Item[T]) []engine.Item[T] {
	if cap(c) == 0 {
		return emptyAs[engine.Item[T]](c == nil)
	}
	return unsafe.Slice((*engine.Item[T])(unsafe.Pointer(unsafe.SliceData(c))), cap(c))[:len(c)]
}

// emptyAs is an empty chunk, nil when isNil. A chunk without capacity is
// not reinterpreted: the array of a non-nil one is the runtime's
// zero-size allocation, and converting that pointer to a pointer to an
// element larger than what follows it in memory is a checkptr failure
// ("converted pointer straddles multiple allocations") under -race.
func emptyAs[E any](isNil bool) []E {
	if isNil {
		return nil
	}
	return []E{}
}

// tickets is ts as this package's tickets, sharing ts's array.
func tickets(ts []engine.Ticket) []Ticket {
	return unsafe.Slice((*Ticket)(unsafe.Pointer(unsafe.SliceData(ts))), cap(ts))[:len(ts)]
}

// engineTickets is ts as the engine's tickets, sharing ts's array.
func engineTickets(ts []Ticket) []engine.Ticket {
	return unsafe.Slice((*engine.Ticket)(unsafe.Pointer(unsafe.SliceData(ts))), cap(ts))[:len(ts)]
}

// itemChan is ch as a channel of this package's chunks: the same channel,
// whose elements (slice headers) have the same layout either way.
func itemChan[T any](ch <-chan []engine.Item[T]) <-chan []Item[T] {
	return *(*<-chan []Item[T])(unsafe.Pointer(&ch))
}
