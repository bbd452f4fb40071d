package engine

import (
	"cmp"
	"slices"
	"sync"
)

// deadLetterJob is one value found invalid: its ticket completes once
// every record claimed for it was delivered.
type deadLetterJob struct {
	stage *Stage
	t     Ticket
	err   error
	left  int // records not delivered yet; guarded by deadLetters.mu
}

// queuedDeadLetter is one record queued for the dead-letter destination:
// its position and offset only, as its slot in the tracker holds the
// record until the dead letter is delivered.
type queuedDeadLetter struct {
	claimed
	job *deadLetterJob
}

// deadLetterItem is a record taken from the queue to be handed to the
// dead-letter destination, with a copy of the record.
type deadLetterItem struct {
	seq uint64
	rec Record
	job *deadLetterJob
}

// deadLetters is a partition's queue of records for the dead-letter
// destination, in offset order, and the state of its dead-letter
// goroutine (deadletter_send.go) and of the dead letters the destination
// took without waiting for their outcome (deadletter_defer.go). The queue
// is unbounded, so the stage that found a record invalid never waits;
// every entry is a record in flight, so the in-flight budget bounds it.
type deadLetters struct {
	mu      sync.Mutex
	pending fifo[queuedDeadLetter] // by sequence number
	closed  bool                   // every stage exited: nothing more is queued
	started bool                   // the dead-letter goroutine started (with the first record queued)
	failed  bool                   // a delivery failed for good: nothing more is delivered
	wake    chan struct{}          // capacity one: pending, closed, an outcome or the tracker changed
	claims  []claimed              // scratch space of deadLetter

	// Dead letters handed over whose outcome comes later, in the order
	// they were handed over (deadletter_defer.go).
	outstanding int                // handed over, outcome not known yet
	waits       fifo[deferredWait] // their outcomes, for the waiter goroutine
	waiting     bool               // a waiter goroutine runs
	waiters     sync.WaitGroup     // the waiter goroutine
	failures    []failedDeadLetter // failed outcomes not retried yet
	call        deadLetterCall     // the context of each call, reused
}

func (q *deadLetters) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// queued returns the records queued and not taken yet.
func (q *deadLetters) queued() []queuedDeadLetter { return q.pending.queued() }

// insert queues it at its place by sequence number: usually the end, as
// records are mostly found invalid in offset order.
func (q *deadLetters) insert(it queuedDeadLetter) {
	queued := q.queued()
	if n := len(queued); n == 0 || queued[n-1].seq < it.seq {
		q.pending.push(it)
		return
	}
	i, _ := slices.BinarySearchFunc(queued, it.seq, func(it queuedDeadLetter, seq uint64) int { return cmp.Compare(it.seq, seq) })
	q.pending.insert(i, it)
}

// take removes and returns the first queued record, which must exist.
func (q *deadLetters) take() queuedDeadLetter {
	it, _ := q.pending.pop()
	return it
}

// dropQueued removes and returns every queued record.
func (q *deadLetters) dropQueued() []queuedDeadLetter { return q.pending.drain() }

// deadLetter queues the records behind t that are not queued yet for the
// partition's dead-letter goroutine, so the stage goes on while they are
// delivered; t completes once they all were. It returns false when the
// graph already exited (a shared batch can fail values of a partition
// that is gone); t is then left as it is.
func (g *graph) deadLetter(s *Stage, t Ticket, err error) bool {
	q := &g.dl
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	recs := g.tr.claimInvalid(q.claims[:0], t)
	q.claims = recs
	if q.failed || len(recs) == 0 {
		q.mu.Unlock()
		if !q.failed {
			// Each record behind t is queued by an earlier value, whose
			// ticket holds it until its dead letter was delivered.
			s.misused(g.tr.done(t))
		}
		return true
	}
	job := &deadLetterJob{stage: s, t: t, err: err, left: len(recs)}
	for _, c := range recs {
		q.insert(queuedDeadLetter{claimed: c, job: job})
	}
	clear(recs)
	g.tr.watched.Store(true)
	if !q.started {
		// A partition with nothing to dead-letter runs no dead-letter
		// goroutine. Starting it before closed is set (under q.mu) adds
		// it to what exited waits for before the stages' share ends.
		q.started = true
		g.ending.Add(1)
		go g.runDeadLetters()
	}
	q.mu.Unlock()
	q.signal()
	return true
}

// runDeadLetters is the partition's dead-letter goroutine, started by the
// first record queued (deadLetter).
func (g *graph) runDeadLetters() {
	defer g.endOne()
	g.sendDeadLetters()
}

// closeDeadLetters tells the dead-letter goroutine that nothing more will
// be queued (every stage exited).
func (g *graph) closeDeadLetters() {
	g.dl.mu.Lock()
	g.dl.closed = true
	g.dl.mu.Unlock()
	g.dl.signal()
}

// MaxOutstandingDeadLetters is the most dead letters of one partition
// that a destination may hold without their outcome (DeferDeadLetter):
// the next one is handed over once the outcome of one of them is known.
// It bounds what a partition's dead letters hold in the client's buffer
// (and in the waiter's queue) while still letting the client batch them.
const MaxOutstandingDeadLetters = 1024

// nextDeadLetter waits for what the dead-letter goroutine does next and
// returns it:
//
//   - retry: failed dead letters, once no outcome is outstanding any more
//     and the waiter recorded every delivered one (nothing new is handed
//     over while there are failures);
//   - it: the first queued record, once it is deliverable (every record
//     before it finished or was queued itself, so that none can still be
//     found invalid and dead letters leave in offset order) and fewer
//     than MaxOutstandingDeadLetters outcomes are outstanding.
//
// It returns false once the queue is closed, no outcome is outstanding
// and its first record (if any) can never become deliverable (a record
// before it will never finish); what is left then stays uncommitted, as
// the record blocking it does. It also returns false once the tracker let
// the partition's records go (the partition is gone and its dead-letter
// goroutine outlived it): nothing it delivered could be committed.
func (g *graph) nextDeadLetter() (it deadLetterItem, retry []failedDeadLetter, ok bool) {
	q := &g.dl
	flushed := false
	for {
		q.mu.Lock()
		settled, found, looked := false, false, false
		if len(q.failures) == 0 && len(q.queued()) > 0 && q.outstanding < MaxOutstandingDeadLetters {
			settled, found = g.tr.settledRecord(q.queued()[0].seq, &it.rec)
			looked = true
		}
		switch {
		case len(q.failures) > 0:
			if q.outstanding == 0 && !q.waiting {
				retry, q.failures = q.failures, nil
				q.mu.Unlock()
				return deadLetterItem{}, retry, true
			}
		case settled && !found:
			q.failed = true
			q.dropQueued()
			q.mu.Unlock()
			g.tr.watched.Store(false)
			return deadLetterItem{}, nil, false
		case settled:
			head := q.take()
			it.seq, it.job = head.seq, head.job
			if len(q.queued()) == 0 {
				g.tr.watched.Store(false)
			}
			q.mu.Unlock()
			return it, nil, true
		case q.closed && q.outstanding == 0:
			left := q.dropQueued()
			q.mu.Unlock()
			if len(left) > 0 {
				g.rt.cfg.Logger.Warn("sluice: dead letters left undelivered because a record before them never finished; they stay uncommitted",
					"topic", g.tp.Topic, "partition", g.tp.Partition, "offsets", offsetsOf(left))
			}
			return deadLetterItem{}, nil, false
		}
		q.mu.Unlock()
		if looked && !flushed {
			// Records before the head may be finished and kept by a
			// stage (done_later.go): complete them and look again. A
			// value kept after this signals wake.
			flushed = true
			g.flushDone()
			continue
		}
		flushed = false
		<-q.wake
	}
}

// offsetsOf returns the offsets of queued dead letters, for messages.
func offsetsOf(items []queuedDeadLetter) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.offset
	}
	return out
}
