package stagekit

import "github.com/sluice-go/sluice/internal/engine"

// Ticket ties a value inside a graph to the records it came from. Run
// issues one ticket per record; a stage passes it along with every value
// derived from that record, and the record's offset can be committed only
// when every reference to its ticket was completed ([Stage.Done], Drop,
// or Fail with an Invalid error). A Ticket is a comparable value with no
// methods; the zero Ticket refers to nothing.
type Ticket struct{ t engine.Ticket }

// Item is one value travelling through a graph with its ticket. Chunks of
// Items are what an [Inlet] receives and an [Outlet] sends.
type Item[T any] struct {
	// Value is the value.
	Value T
	// Ticket stands for the records Value came from.
	Ticket Ticket
}

// Inlet is a stage's input. The run function given to [AddStage],
// [AddFanOut] or [AddEnd] gets it; only the stage's goroutines use it.
type Inlet[T any] struct{ in *engine.Inlet[T] }

// Recv returns the next chunk of values, blocking until one arrives. It
// returns false when the input is closed (a revoke or shutdown is
// draining the graph and everything upstream finished) or the partition's
// context is done (the partition was lost, its drain timed out); once the
// context is done it never returns a chunk, even if some are still
// buffered: those values are dropped uncompleted. Pass each chunk to
// [Inlet.Release] once its values are no longer referenced.
func (in *Inlet[T]) Recv() ([]Item[T], bool) {
	c, ok := in.in.Recv()
	return items(c), ok
}

// Release returns a received chunk for reuse, once its values are no
// longer referenced (their tickets completed or passed on). Any goroutine
// of the stage may call it; a chunk is released once.
func (in *Inlet[T]) Release(c []Item[T]) { in.in.Release(engineItems(c)) }

// C returns the input channel, for a stage that selects on it together
// with a timer or other events ([RunLoop] does this for you). Such a
// stage must also select on the stage's context, and drop (Release,
// without completing) a chunk received once the context is done: select
// picks ready cases at random. The channel is closed when the input is
// closed.
func (in *Inlet[T]) C() <-chan []Item[T] { return itemChan(in.in.C()) }

// Outlet is a stage's output. The run function given to [AddStage] or
// [AddFanOut] gets it; only the stage's goroutines use it. It is closed
// when the run function returns: do not Send after that.
type Outlet[T any] struct{ out *engine.Outlet[T] }

// Buffer returns an empty chunk to fill (append to) and [Outlet.Send]. Its
// capacity follows what the output carried recently.
func (o *Outlet[T]) Buffer() []Item[T] { return items(o.out.Buffer()) }

// Send passes a chunk downstream, in order, blocking while the downstream
// channel is full; the chunk then belongs to the next stage. It returns
// false when the partition's context is done: the chunk's values are
// dropped without completing their tickets (they are not committed), and
// the stage should return. Empty chunks are recycled, not sent. A chunk
// holding a value whose ticket has no reference left (the stage completed
// it) is not sent either: Run stops with a *sluice.StageError wrapping
// [ErrTicketCompleted], the partition's context is cancelled and Send
// returns false. A revoke or shutdown that is draining the graph does not
// stop Send: the chunk is delivered and drained.
func (o *Outlet[T]) Send(c []Item[T]) bool { return o.out.Send(engineItems(c)) }
