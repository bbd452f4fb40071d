package main

import (
	"math/bits"
	"sync/atomic"
)

// tracker records what a measured run consumed, partition by partition:
// which offsets it saw (a bitmap, so duplicates and gaps are exact), how
// many, and the sum of their value hashes. It is safe for concurrent use;
// its cost per record (two or three atomic operations and a CRC of the
// value) is the same in every case.
type tracker struct {
	l     layout
	parts []partTrack
}

type partTrack struct {
	seen       []atomic.Uint64 // bit o set: offset o was recorded
	count      atomic.Int64    // records recorded, duplicates included
	dups       atomic.Int64    // records whose offset was already seen
	outOfRange atomic.Int64    // offsets beyond the partition's end
	hash       atomic.Uint64   // sum of valueHash over recorded records
}

func newTracker(l layout) *tracker {
	t := &tracker{l: l, parts: make([]partTrack, l.partitions)}
	for p := range t.parts {
		t.parts[p].seen = make([]atomic.Uint64, (l.count(p)+63)/64)
	}
	return t
}

// record notes offset o of partition p, whose value hashes to h. It
// returns false if p is not a partition of the layout (the caller treats
// that as a failed run).
func (t *tracker) record(p int32, o int64, h uint64) bool {
	if p < 0 || int(p) >= len(t.parts) {
		return false
	}
	pt := &t.parts[p]
	pt.count.Add(1)
	pt.hash.Add(h)
	if o < 0 || o >= t.l.count(int(p)) {
		pt.outOfRange.Add(1)
		return true
	}
	bit := uint64(1) << (o % 64)
	if pt.seen[o/64].Or(bit)&bit != 0 {
		pt.dups.Add(1)
	}
	return true
}

// total returns the records recorded so far, duplicates included.
func (t *tracker) total() int64 {
	var n int64
	for p := range t.parts {
		n += t.parts[p].count.Load()
	}
	return n
}

// PartStats is what a child reports about one partition it consumed.
type PartStats struct {
	Partition  int32  `json:"partition"`
	Count      int64  `json:"count"`    // records, duplicates included
	Distinct   int64  `json:"distinct"` // distinct offsets in range
	Min        int64  `json:"min"`      // lowest offset seen, -1 if none
	Max        int64  `json:"max"`      // highest offset seen, -1 if none
	Dups       int64  `json:"dups"`
	OutOfRange int64  `json:"out_of_range"`
	Hash       uint64 `json:"hash"`
}

// stats summarises every partition. Call it once recording stopped.
func (t *tracker) stats() []PartStats {
	out := make([]PartStats, len(t.parts))
	for p := range t.parts {
		pt := &t.parts[p]
		s := PartStats{Partition: int32(p), Count: pt.count.Load(), Min: -1, Max: -1,
			Dups: pt.dups.Load(), OutOfRange: pt.outOfRange.Load(), Hash: pt.hash.Load()}
		for i := range pt.seen {
			w := pt.seen[i].Load()
			if w == 0 {
				continue
			}
			s.Distinct += int64(bits.OnesCount64(w))
			if s.Min < 0 {
				s.Min = int64(i)*64 + int64(bits.TrailingZeros64(w))
			}
			s.Max = int64(i)*64 + 63 - int64(bits.LeadingZeros64(w))
		}
		out[p] = s
	}
	return out
}
