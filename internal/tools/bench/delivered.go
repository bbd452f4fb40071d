package main

import (
	"sync"
	"sync/atomic"
)

// deliveries tracks, per input partition, which records of a consume →
// produce loop were delivered to the output topic, and the offset below
// which all were: the offset the raw loops may commit. Records of one
// input partition go to several output partitions, so their deliveries
// arrive out of order. mark is called from the producer's report
// goroutine; next and done from any goroutine.
type deliveries struct {
	l    layout
	mu   sync.Mutex
	seen [][]bool
	next []atomic.Int64
	left atomic.Int64  // records not yet delivered
	done chan struct{} // closed when left reaches zero
}

func newDeliveries(l layout) *deliveries {
	d := &deliveries{l: l, seen: make([][]bool, l.partitions), next: make([]atomic.Int64, l.partitions), done: make(chan struct{})}
	for p := range d.seen {
		d.seen[p] = make([]bool, l.count(p))
	}
	d.left.Store(int64(l.records))
	return d
}

// mark notes the delivery of input offset o of partition p and reports
// whether it was the last record to be delivered; a second delivery of
// the same record, or an offset outside the layout, is ignored (the
// parent's check of the output topic finds them).
func (d *deliveries) mark(p int32, o int64) (last bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p < 0 || int(p) >= len(d.seen) || o < 0 || o >= int64(len(d.seen[p])) || d.seen[p][o] {
		return false
	}
	d.seen[p][o] = true
	n := d.next[p].Load()
	for n < int64(len(d.seen[p])) && d.seen[p][n] {
		n++
	}
	d.next[p].Store(n)
	if d.left.Add(-1) == 0 {
		close(d.done)
		return true
	}
	return false
}

// committable returns, for every partition, the offset below which every
// record was delivered.
func (d *deliveries) committable() []int64 {
	out := make([]int64, len(d.next))
	for p := range d.next {
		out[p] = d.next[p].Load()
	}
	return out
}
