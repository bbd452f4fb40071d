package stagekit

import "github.com/sluice-go/sluice/internal/engine"

// Ticket ties a value inside a graph to the records it came from. Run
// issues one ticket per record; a stage passes it along with every value
// derived from that record, and the record's offset can be committed only
// when every reference to its ticket was completed (Stage.Done, Drop, or
// Fail with an Invalid error). A Ticket is a comparable value with no
// methods; the zero Ticket refers to nothing.
type Ticket = engine.Ticket

// Item is one value travelling through a graph with its ticket: a struct
// with the fields Value (T) and Ticket ([Ticket]).
type Item[T any] = engine.Item[T]

// Inlet is a stage's input, read only by the stage's goroutines:
//
//   - Recv() ([]Item[T], bool) returns the next chunk of values. It returns
//     false when the input is closed (the graph is draining and everything
//     upstream finished) or the partition context is done; once the
//     context is done it never returns a chunk, even if some are still
//     buffered.
//   - Release(c []Item[T]) returns a received chunk for reuse, once its
//     values are no longer referenced.
//   - C() <-chan []Item[T] is the input channel, for a stage that selects
//     on it together with a timer. Such a stage must also select on the
//     stage context, and drop (Release, without completing) a chunk
//     received once the context is done: select picks ready cases at
//     random.
type Inlet[T any] = engine.Inlet[T]

// Outlet is a stage's output, written only by the stage's goroutines:
//
//   - Buffer() []Item[T] returns an empty chunk to fill and Send.
//   - Send(c []Item[T]) bool passes a chunk downstream, blocking while the
//     downstream channel is full. It returns false when the partition
//     context is done; the chunk's values are then dropped without
//     completing their tickets. Empty chunks are recycled, not sent. A
//     chunk holding a value whose ticket has no reference left (the
//     stage completed it) is not sent either: Run stops with an error
//     wrapping [ErrTicketCompleted], the partition's context is
//     cancelled and Send returns false.
type Outlet[T any] = engine.Outlet[T]
