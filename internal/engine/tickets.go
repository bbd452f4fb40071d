package engine

// Ticket ties a value inside a graph to the records it came from. The
// runtime issues one ticket per record; stages pass it along with every
// value derived from that record, and the record's offset can be committed
// only when every ticket that refers to it has been completed.
//
// Tickets are for stage authors (see [AddStage]); users of package stages
// never see them. The zero Ticket refers to nothing.
type Ticket struct{ id uint64 }

// joinedBit marks a ticket that stands for a set of other tickets (a batch).
const joinedBit = 1 << 63

func (t Ticket) joined() bool { return t.id&joinedBit != 0 }

// Item is one value travelling through a graph with its ticket.
type Item[T any] struct {
	Value  T
	Ticket Ticket
}
