package engine

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// tracker does one partition's offset accounting. Every delivered record
// gets a slot holding the record and a reference count; stages complete
// references as values reach an End, get filtered out or dead-lettered,
// and the committable offset advances past the longest prefix of slots
// whose count dropped to zero. Joined tickets (batches) hold references to
// their members and release them all when they complete.
//
// A ticket completed more often than it was referenced (a stage completed
// a value and still passed it on, or completed it twice) is a fault of
// the partition (see misuse.go): from the first one on, the committable
// offset no longer advances.
//
// All methods are safe for concurrent use; stages call them once per chunk,
// not once per record, so one lock per chunk is the cost.
type tracker struct {
	mu   sync.Mutex
	q    slots  // the live slots, in segments of the Run's pool (segments.go)
	size int    // live slots
	base uint64 // sequence number of the oldest live slot; tickets are seq+1
	// fed is the sequence number of the first record not handed to the
	// graph's feeder yet (see feed): the slots are also the input queue.
	fed uint64
	// early counts the live slots whose references all completed, behind
	// one that has not: while it is zero, every live slot is held, which
	// spares the check of a chunk passed on (misuse.go) a look at each
	// slot.
	early int

	joins []join // indexed by Ticket.joinIndex
	free  []int  // reusable indexes into joins

	next  int64 // next offset to commit; -1 before anything completed
	bytes int64 // payload bytes of live slots
	// onDone is passed the records and bytes of every completion that
	// advanced next, outside mu: it returns their budget (and so may
	// let the source commit them). Without onCompleted it is called at
	// once, in no particular order, and a completion takes mu once.
	onDone func(records int, bytes int64)
	// onCompleted, nil when no hook listens, is passed the same
	// completions one call at a time, with next increasing, each before
	// its onDone, so that a commit is never seen before the hook counted
	// its records: the goroutine that finds no call running (reporting
	// unset) makes the calls, and completions that arrive meanwhile are
	// added to unreported, for it to pass on before it stops.
	//
	// reporting is set under mu and cleared by the reporter without it;
	// arrived is set, under mu, by every completion added to unreported
	// and cleared when they are taken. The reporter clears reporting and
	// then reads arrived, a completion sets arrived and then reads
	// reporting: one of the two sees the other's write, so a completion
	// is never left unreported, and a reporter that finds nothing
	// arrived leaves without taking mu again (one lock per completion,
	// which Each pays per value).
	onCompleted func(records int, next int64)
	// shown is, with onCompleted, the next offset of the last call that
	// returned, stored before that call's budget goes back: what
	// committable hands the source, so that no commit is seen before
	// the hook counted its records.
	shown           atomic.Int64
	reporting       atomic.Bool
	arrived         atomic.Bool
	unreported      int
	unreportedBytes int64

	limit    *dlLimiter // nil without a DeadLetterLimit
	onLimit  func(error)
	tripped  error
	reported bool // tripped was passed to onLimit

	// While watched is set (dead letters wait for the records before
	// them), every completion signals settled (capacity one).
	watched atomic.Bool
	settled chan struct{}
	// settledTo is a sequence number before which every record finished
	// or was flagged dead-lettered (see settledBefore).
	settledTo uint64

	// Share mode (share.go): nil otherwise. acks collects, under mu,
	// the outcomes of slots that finished, for share.
	share *shareAcks
	tp    TopicPartition
	acks  []Ack

	// fault is the partition's first ticket misuse (misuse.go); once set,
	// nothing more is committed or acknowledged.
	fault *ticketFault
	// dropped: the graph is gone and drop forgot its slots; completions
	// that still arrive (a batch shared by several partitions) are
	// ignored.
	dropped bool
}

type slot struct {
	rec     Record
	refs    int32
	invalid bool       // dead-lettered
	unfed   bool       // dead-lettered without running the graph: the feeder passes over it
	fate    AckOutcome // share mode: set when not accepted (share.go)
}

type join struct {
	refs    int32
	gen     uint32 // bumped when the entry is freed (see Ticket)
	members []Ticket
}

// newTracker returns a tracker whose slots come from pool (one per Run,
// shared by its partitions).
func newTracker(pool *segmentPool, onDone func(records int, bytes int64)) *tracker {
	tr := &tracker{q: slots{pool: pool}, next: -1, onDone: onDone}
	tr.shown.Store(-1)
	return tr
}

// RecordOverhead is what the runtime itself holds per record in flight,
// counted in the byte budget on top of the record's key and value: its
// tracker slot (a copy of the Record and its reference count) and one
// copy in a chunk of the graph's input edge (an Item[Record]), 272 bytes
// on 64-bit platforms. Later stages hold their own, usually smaller,
// values in place of that copy.
const RecordOverhead = int64(unsafe.Sizeof(slot{}) + unsafe.Sizeof(Item[Record]{}))

// recordBytes is what a record weighs in the byte budget: its key and
// value plus RecordOverhead.
func recordBytes(r *Record) int64 { return int64(len(r.Key)+len(r.Value)) + RecordOverhead }

// add appends records (in offset order) and returns the sequence number of
// the first one; the others follow consecutively.
func (tr *tracker) add(recs []Record) uint64 {
	var b int64
	for i := range recs {
		b += recordBytes(&recs[i])
	}
	return tr.addWeighed(recs, b)
}

// addWeighed is add for records that weigh b bytes in all (the sum of
// their recordBytes), which the caller summed already.
func (tr *tracker) addWeighed(recs []Record, b int64) uint64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	first := tr.base + uint64(tr.size)
	tr.q.ensure(first + uint64(len(recs)))
	for i := range recs {
		s := tr.q.at(first + uint64(i))
		s.rec = recs[i]
		s.refs = 1
	}
	tr.size += len(recs)
	tr.bytes += b
	return first
}

// addUnfed appends one record that the feeder passes over (see
// Group.DeadLetterRecord) and returns its sequence number. Its one
// reference is the caller's.
func (tr *tracker) addUnfed(rec Record) uint64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	seq := tr.base + uint64(tr.size)
	tr.q.ensure(seq + 1)
	s := tr.q.at(seq)
	s.rec, s.refs, s.unfed = rec, 1, true
	tr.size++
	tr.bytes += recordBytes(&rec)
	return seq
}

// feed appends to buf, with their tickets, up to n of the records added
// and not fed yet, in order, and returns buf; it passes over unfed
// records. A fed record cannot complete before it is fed (its one
// reference is the fed value's), so the records not fed yet are live
// slots, but for unfed ones, which may have completed and left: feeding
// starts at the oldest live slot.
func (tr *tracker) feed(buf []Item[Record], n int) []Item[Record] {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.fed = max(tr.fed, tr.base)
	end := tr.base + uint64(tr.size)
	for ; n > 0 && tr.fed < end; tr.fed++ {
		s := tr.q.at(tr.fed)
		if s.unfed {
			continue
		}
		buf = append(buf, Item[Record]{Value: s.rec, Ticket: ticketAt(tr.fed)})
		n--
	}
	return buf
}

// ticketAt returns the ticket of the record with sequence number seq.
func ticketAt(seq uint64) Ticket { return Ticket{id: seq + 1} }

// slotOf returns the live slot of a record ticket, or nil.
func (tr *tracker) slotOf(t Ticket) *slot {
	seq := t.id - 1
	if t.id == 0 || seq < tr.base || seq >= tr.base+uint64(tr.size) {
		return nil
	}
	return tr.q.at(seq)
}

// done completes one reference of each ticket. It returns the
// partition's first fault when one of ts had no reference left to
// complete (see misuse.go), else nil.
func (tr *tracker) done(ts ...Ticket) *ticketFault {
	tr.mu.Lock()
	if tr.dropped {
		tr.mu.Unlock()
		return nil
	}
	var fault *ticketFault
	for _, t := range ts {
		if !tr.release(t) && fault == nil {
			fault = tr.faultLocked(t, faultCompleted)
		}
	}
	n, b := tr.advance()
	next := tr.next
	reported, reportedBytes := 0, int64(0)
	if n > 0 && tr.onCompleted != nil {
		// With a completion hook the budget goes back after the hook
		// was told, in report.
		tr.unreported += n
		tr.unreportedBytes += b
		n, b = 0, 0
		if !tr.reporting.Load() || tr.arrive() {
			tr.reporting.Store(true)
			reported, reportedBytes = tr.takeUnreported()
		}
	}
	var acks []Ack
	if tr.share != nil {
		acks, tr.acks = tr.acks, nil
	}
	var tripped error
	if tr.tripped != nil && !tr.reported {
		tripped, tr.reported = tr.tripped, true
	}
	tr.mu.Unlock()
	if n > 0 {
		tr.onDone(n, b)
	}
	if reported > 0 {
		// Before the acks: a share group's acknowledgement is its commit,
		// so the records this call reports are acknowledged after the
		// hook counted them; and the reporter's role is handed back
		// before anything else runs.
		tr.report(reported, reportedBytes, next)
	}
	if acks != nil {
		tr.flushAcks(acks)
	}
	tr.signalSettled()
	if tripped != nil {
		tr.onLimit(tripped)
	}
	return fault
}

// takeUnreported returns the completions not reported yet and clears
// them. Callers hold mu.
func (tr *tracker) takeUnreported() (int, int64) {
	n, b := tr.unreported, tr.unreportedBytes
	tr.unreported, tr.unreportedBytes = 0, 0
	if tr.arrived.Load() {
		tr.arrived.Store(false)
	}
	return n, b
}

// arrive marks completions added to unreported while a reporter runs, and
// reports whether that reporter has left meanwhile (then the caller
// reports them). Callers hold mu.
func (tr *tracker) arrive() bool {
	tr.arrived.Store(true)
	return !tr.reporting.Load()
}

// report passes n records and next to onCompleted and then returns their
// b bytes of budget with onDone, then does the same for the completions
// that arrived during the call, until there are none. The caller set
// reporting; report clears it when it returns, also when a hook panics
// (onCompleted, or one that onDone runs), and the budget of a round whose
// onCompleted panicked still goes back.
func (tr *tracker) report(n int, b int64, next int64) {
	told, done := false, false
	defer func() {
		if done {
			return
		}
		tr.mu.Lock()
		tr.reporting.Store(false)
		tr.mu.Unlock()
		if !told { // onCompleted panicked: its records' budget still goes back
			tr.onDone(n, b)
		}
	}()
	for n > 0 {
		told = false
		tr.onCompleted(n, next)
		told = true
		tr.shown.Store(next)
		tr.onDone(n, b)
		n, b = 0, 0
		// Hand the role back, then take it again if completions arrived
		// meanwhile and no other goroutine took it (see arrived).
		tr.reporting.Store(false)
		if !tr.arrived.Load() {
			break
		}
		tr.mu.Lock()
		if !tr.reporting.Load() && tr.unreported > 0 {
			tr.reporting.Store(true)
			n, b = tr.takeUnreported()
			next = tr.next
		}
		tr.mu.Unlock()
	}
	done = true
}

// release completes one reference of t. It returns false, changing
// nothing, when t has no reference left to complete: its record or join
// already completed (the zero Ticket refers to nothing and is always
// accepted). A joined ticket whose last reference completes releases its
// members; it reports false as well when one of them had none left.
func (tr *tracker) release(t Ticket) bool {
	if t.joined() {
		j := tr.joinOf(t)
		if j == nil {
			return false
		}
		if j.refs--; j.refs > 0 {
			return true
		}
		ok := true
		for _, m := range j.members {
			ok = tr.release(m) && ok
		}
		clear(j.members)
		j.members = j.members[:0]
		j.gen = (j.gen + 1) & joinGenMask
		tr.free = append(tr.free, t.joinIndex())
		return ok
	}
	if t.id == 0 {
		return true
	}
	s := tr.slotOf(t)
	if s == nil || s.refs <= 0 {
		return false
	}
	if s.refs--; s.refs == 0 {
		tr.early++
		if tr.share != nil && tr.fault == nil {
			tr.finishedLocked(s)
		}
	}
	return true
}

// joinOf returns the entry of a joined ticket that still holds a
// reference, or nil: the ticket completed, and its entry may serve
// another join already (under another generation).
func (tr *tracker) joinOf(t Ticket) *join {
	i := t.joinIndex()
	if i < 0 || i >= len(tr.joins) {
		return nil
	}
	j := &tr.joins[i]
	if j.gen != t.joinGen() || j.refs <= 0 {
		return nil
	}
	return j
}

// retain adds n references to t. It returns the partition's first fault
// when t has no reference left (see misuse.go), else nil.
func (tr *tracker) retain(t Ticket, n int) *ticketFault {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.dropped {
		return nil
	}
	if !tr.retainLocked(t, n) {
		return tr.faultLocked(t, faultRetained)
	}
	return nil
}

// retainLocked adds n references to t; false, changing nothing, when t
// has none left (the zero Ticket is always accepted).
func (tr *tracker) retainLocked(t Ticket, n int) bool {
	if t.joined() {
		j := tr.joinOf(t)
		if j == nil {
			return false
		}
		j.refs += int32(n)
		return true
	}
	if t.id == 0 {
		return true
	}
	s := tr.slotOf(t)
	if s == nil || s.refs <= 0 {
		return false
	}
	s.refs += int32(n)
	return true
}

// join returns one ticket that holds the references of ts and releases
// them when it completes. It also returns the partition's first fault
// when one of ts has no reference left (see misuse.go), else nil.
func (tr *tracker) join(ts []Ticket) (Ticket, *ticketFault) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var fault *ticketFault
	if !tr.dropped {
		for _, t := range ts {
			if !tr.heldLocked(t) {
				fault = tr.faultLocked(t, faultJoined)
				break
			}
		}
	}
	var i int
	if n := len(tr.free); n > 0 {
		i, tr.free = tr.free[n-1], tr.free[:n-1]
	} else {
		tr.joins = append(tr.joins, join{})
		i = len(tr.joins) - 1
	}
	j := &tr.joins[i]
	j.refs = 1
	j.members = append(j.members, ts...)
	return joinedTicket(i, j.gen), fault
}

// split returns the n tickets joined into t, in join order, each with one
// more reference, and completes one reference of t. It returns nil and
// changes nothing unless t is a joined ticket of n members that still
// holds a reference; for one that holds none it also returns the
// partition's first fault (see misuse.go).
func (tr *tracker) split(t Ticket, n int) ([]Ticket, *ticketFault) {
	if !t.joined() {
		return nil, nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	j := tr.joinOf(t)
	if j == nil {
		if tr.dropped {
			return nil, nil
		}
		return nil, tr.faultLocked(t, faultSplit)
	}
	if len(j.members) != n {
		return nil, nil
	}
	ts := append([]Ticket(nil), j.members...)
	for _, m := range ts {
		tr.retainLocked(m, 1) // a member without a reference is reported when t completes
	}
	tr.release(t) // no member drops to zero: each just gained a reference
	return ts, nil
}

// claimed is a record claimed for the dead-letter destination: its
// sequence number (its position among the partition's records) and its
// offset. The record itself stays in its slot, which the value's ticket
// holds until the dead letter is delivered; settledRecord reads it when
// the dead letter is handed over.
type claimed struct {
	seq    uint64
	offset int64
}

// claimInvalid flags the records behind t as dead-lettered (for the
// dead-letter limits and the dead-letter order) and appends those that
// were not flagged before: a record is dead-lettered once even when
// several values derived from it (the elements of an unbatched batch) are
// found invalid.
func (tr *tracker) claimInvalid(dst []claimed, t Ticket) []claimed {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.claimInvalidLocked(dst, t)
}

func (tr *tracker) claimInvalidLocked(dst []claimed, t Ticket) []claimed {
	if t.joined() {
		if j := tr.joinOf(t); j != nil {
			for _, m := range j.members {
				dst = tr.claimInvalidLocked(dst, m)
			}
		}
		return dst
	}
	if s := tr.slotOf(t); s != nil && !s.invalid {
		s.invalid = true
		dst = append(dst, claimed{seq: t.id - 1, offset: s.rec.Offset})
	}
	return dst
}

// withFirstRecord calls fn, under the tracker's lock, with the first
// record behind t that is not committable yet, and reports whether there
// was one.
func (tr *tracker) withFirstRecord(t Ticket, fn func(*Record)) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	recs := tr.recordsLocked(nil, t)
	if len(recs) == 0 {
		return false
	}
	fn(&recs[0])
	return true
}

// settledRecord copies the record at sequence number seq into rec once
// every record before it is finished or flagged dead-lettered: none of
// them can still be found invalid, so a dead letter for seq keeps offset
// order. It reports whether they are (settled) and whether the record
// was still held (found: false once the tracker dropped its slots, when
// the partition is gone). A record that settled stays settled, so the
// scan resumes where the last one stopped (settledTo): the records before
// the queued dead letters (many of them dead letters still in flight)
// are looked at once, not once per dead letter.
func (tr *tracker) settledRecord(seq uint64, rec *Record) (settled, found bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.settledTo = max(tr.settledTo, tr.base)
	for end := tr.base + uint64(tr.size); tr.settledTo < seq && tr.settledTo < end; tr.settledTo++ {
		if s := tr.q.at(tr.settledTo); s.refs > 0 && !s.invalid {
			return false, false
		}
	}
	if seq < tr.base || seq >= tr.base+uint64(tr.size) {
		return true, false
	}
	*rec = tr.q.at(seq).rec
	return true, true
}

// records appends the records a ticket refers to.
func (tr *tracker) records(dst []Record, t Ticket) []Record {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.recordsLocked(dst, t)
}

func (tr *tracker) recordsLocked(dst []Record, t Ticket) []Record {
	if t.joined() {
		if j := tr.joinOf(t); j != nil {
			for _, m := range j.members {
				dst = tr.recordsLocked(dst, m)
			}
		}
		return dst
	}
	if s := tr.slotOf(t); s != nil {
		dst = append(dst, s.rec)
	}
	return dst
}

// advance drops the completed prefix and moves next past it. It returns
// how many records and bytes left the tracker. After a fault it does
// nothing: a record that completed may still be in the graph.
func (tr *tracker) advance() (int, int64) {
	n, b := 0, int64(0)
	if tr.fault != nil {
		return 0, 0
	}
	for tr.size > 0 {
		s := tr.q.at(tr.base)
		if s.refs > 0 {
			break
		}
		tr.next = s.rec.Offset + 1
		b += recordBytes(&s.rec)
		if tr.limit != nil && tr.tripped == nil {
			tr.tripped = tr.limit.observe(s.invalid, &s.rec)
		}
		*s = slot{}
		tr.size--
		tr.base++
		n++
	}
	tr.q.trim(tr.base)
	tr.bytes -= b
	tr.early -= n
	return n, b
}

// committable returns the next offset to commit, or -1. With a
// completion hook it is the next offset of the last report made: records
// that completed are committable once the hook was told about them.
func (tr *tracker) committable() int64 {
	if tr.onCompleted != nil {
		return tr.shown.Load()
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.next
}

// drop forgets every live slot of a stopped graph, gives its segments
// back to the Run's pool, and returns how many records and bytes were
// held, with the completions no report is running for (left by a report
// whose hook panicked): nothing completes after drop to report them. A
// running report returns its own.
func (tr *tracker) drop() (int, int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n, b := tr.size, tr.bytes
	if !tr.reporting.Load() {
		un, ub := tr.takeUnreported()
		n, b = n+un, b+ub
	}
	tr.q.release(tr.base, tr.size)
	tr.size, tr.bytes, tr.early = 0, 0, 0
	tr.dropped = true
	return n, b
}

// signalSettled wakes the dead-letter goroutine while it waits for the
// records before a dead letter to finish (watched).
func (tr *tracker) signalSettled() {
	if tr.watched.Load() {
		select {
		case tr.settled <- struct{}{}:
		default:
		}
	}
}
