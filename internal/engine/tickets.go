package engine

// Ticket ties a value inside a graph to the records it came from. The
// runtime issues one ticket per record; stages pass it along with every
// value derived from that record, and the record's offset can be committed
// only when every ticket that refers to it has been completed.
//
// Tickets are for stage authors (see [AddStage]); users of package stages
// never see them. The zero Ticket refers to nothing.
type Ticket struct{ id uint64 }

// A record's ticket is its sequence number plus one. A joined ticket (a
// batch) has joinedBit set, the generation of its join entry in bits 32
// to 62 and the entry's index plus one in bits 0 to 31: an entry is
// reused, under the next generation, once its ticket completed, so that a
// ticket of an earlier generation is told from the entry's current one.
const (
	joinedBit    = 1 << 63
	joinGenShift = 32
	joinGenMask  = 1<<31 - 1
)

func (t Ticket) joined() bool { return t.id&joinedBit != 0 }

// joinIndex is the index in tracker.joins of a joined ticket's entry.
func (t Ticket) joinIndex() int { return int(uint32(t.id)) - 1 }

// joinGen is the generation of a joined ticket.
func (t Ticket) joinGen() uint32 { return uint32(t.id>>joinGenShift) & joinGenMask }

// joinedTicket returns the ticket of join entry i in generation gen.
func joinedTicket(i int, gen uint32) Ticket {
	return Ticket{id: joinedBit | uint64(gen)<<joinGenShift | uint64(i+1)}
}

// Item is one value travelling through a graph with its ticket.
type Item[T any] struct {
	Value  T
	Ticket Ticket
}
