package engine

import "sync"

// This file is the storage of the trackers' slots: fixed-size segments
// taken from, and given back to, one free list per Run, so that a
// partition's memory follows the records it holds now, not the most it
// ever held, and a Run's slot memory is bounded by its in-flight budget
// (plus one segment per partition) whatever the number of partitions.

// segmentShift sets the slots per segment: 64 (8.5 KiB).
const (
	segmentShift = 6
	segmentSlots = 1 << segmentShift
)

// segment is a run of consecutive slots of one tracker.
type segment [segmentSlots]slot

// segmentPool is a Run's free segments. Its methods are safe for
// concurrent use; trackers call them once per segmentSlots records.
type segmentPool struct {
	mu   sync.Mutex
	free []*segment // all slots zero
}

// get returns a segment whose slots are all zero.
func (p *segmentPool) get() *segment {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return new(segment)
}

// put takes back a segment whose slots are all zero. The free list never
// holds more segments than the Run once used at the same time.
func (p *segmentPool) put(s *segment) {
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
}

// slots is one tracker's live slots: a queue of segments, the first
// holding sequence number first. Callers hold the tracker's lock.
type slots struct {
	pool  *segmentPool
	segs  []*segment // circular, len a power of two (or 0)
	head  int        // index in segs of the first segment
	n     int        // segments in use
	first uint64     // sequence number of slot 0 of segs[head]
}

// at returns the slot of sequence number seq, which must be within the
// segments in use.
func (q *slots) at(seq uint64) *slot {
	off := seq - q.first
	return &q.segs[(q.head+int(off>>segmentShift))&(len(q.segs)-1)][off&(segmentSlots-1)]
}

// ensure makes room for the slots of sequence numbers below end.
func (q *slots) ensure(end uint64) {
	for end > q.first+uint64(q.n)<<segmentShift {
		if q.n == len(q.segs) {
			q.growIndex()
		}
		q.segs[(q.head+q.n)&(len(q.segs)-1)] = q.pool.get()
		q.n++
	}
}

// growIndex doubles the segment index (a few pointers per partition).
func (q *slots) growIndex() {
	segs := make([]*segment, max(2*len(q.segs), 4))
	for i := range q.n {
		segs[i] = q.segs[(q.head+i)&(len(q.segs)-1)]
	}
	q.segs, q.head = segs, 0
}

// trim gives back the segments wholly below sequence number base, whose
// slots the tracker has zeroed.
func (q *slots) trim(base uint64) {
	for q.n > 0 && base >= q.first+segmentSlots {
		q.pool.put(q.segs[q.head])
		q.segs[q.head] = nil
		q.head = (q.head + 1) & (len(q.segs) - 1)
		q.n--
		q.first += segmentSlots
	}
}

// release zeroes the slots of sequence numbers from base to base+size
// and gives every segment back: the tracker holds no slot memory after
// it, and its next slot would be base's.
func (q *slots) release(base uint64, size int) {
	for i := range size {
		*q.at(base + uint64(i)) = slot{}
	}
	for q.n > 0 {
		q.pool.put(q.segs[q.head])
		q.segs[q.head] = nil
		q.head = (q.head + 1) & (len(q.segs) - 1)
		q.n--
	}
	q.segs, q.head, q.first = nil, 0, base
}
