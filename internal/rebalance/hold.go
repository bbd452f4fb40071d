package rebalance

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// This file is what the core keeps of partitions it paused: the records
// the client returned for a partition after Deliver asked to pause it
// (the rest of the poll that paused it) are not handed over but held here,
// outside the runtime's admission queue, and delivered when Group.Resumable
// lists the partition; only once none is left is the client resumed. So
// the runtime gets at most one delivery per partition beyond its budget,
// whatever the client returns for a partition it was told to pause.
//
// What the core holds is bounded too, from the Group's in-flight limits:
// at most holdRecords records (Room caps what a backend takes from its
// client per poll), and a backend takes nothing while the core holds
// holdBytes bytes or more.

// holdShare: the core holds at most an eighth of the in-flight limits
// (records, bytes), and a delivery weighs at most an eighth of the byte
// limit (one record alone may weigh more).
const holdShare = 8

// Weight is what a record counts in the runtime's byte budget: its key
// and value plus pipeline.RecordOverhead.
func Weight(r *sluice.Record) int64 {
	return int64(len(r.Key)+len(r.Value)) + pipeline.RecordOverhead
}

// limits are what the core derives from the Group's in-flight limits.
type limits struct {
	holdRecords int   // records held at most
	holdBytes   int64 // bytes held before backends stop taking records
	batchBytes  int64 // bytes of one delivery at most (one record alone may weigh more)
}

func limitsOf(g sluice.Group) limits {
	records, bytes := g.MaxInFlight(), g.MaxInFlightBytes()
	if records <= 0 {
		records = pipeline.DefaultMaxInFlight
	}
	if bytes <= 0 {
		bytes = pipeline.DefaultMaxInFlightBytes
	}
	share := max(bytes/holdShare, 1)
	return limits{holdRecords: max(MaxBatch, records/holdShare), holdBytes: share, batchBytes: share}
}

// Room returns how many records the backend may take from its client in
// its next poll, so that what the core holds stays within its share of
// both limits: the records it may still hold, and as many records of the
// average weight of those delivered so far as its share of bytes has room
// for (at least one while it has any). Before any record was weighed it
// is one: the first poll's records could weigh anything. A backend whose
// client can be left alone (kgo) takes nothing at 0; the held records are
// delivered as the runtime resumes their partitions.
func (c *Core) Room() int {
	if c.heldRecords >= c.lim.holdRecords || c.heldBytes >= c.lim.holdBytes {
		return 0
	}
	if c.avgWeight == 0 {
		return 1
	}
	n := c.lim.holdRecords - c.heldRecords
	return min(n, max(1, int((c.lim.holdBytes-c.heldBytes)/c.avgWeight)))
}

// SpareRoom is Room while the core holds less than half of its share of
// both limits, up to that half, and 0 beyond: what a backend may take
// from its client beyond what a poll asked for (the franz source takes
// kgo's buffered records before a pause), leaving the other half for the
// polls, so that the records held for partitions the runtime does not
// resume leave room for the others.
func (c *Core) SpareRoom() int {
	half := c.lim.holdRecords / 2
	if c.heldRecords >= half || c.heldBytes >= c.lim.holdBytes/2 || c.avgWeight == 0 {
		return 0
	}
	return min(half-c.heldRecords, max(1, int((c.lim.holdBytes/2-c.heldBytes)/c.avgWeight)))
}

// weighed updates the average weight of a record with a batch of n
// records weighing bytes (a moving average over batches).
func (c *Core) weighed(n int, bytes int64) {
	if n == 0 {
		return
	}
	w := bytes / int64(n)
	if c.avgWeight == 0 {
		c.avgWeight = w
		return
	}
	c.avgWeight += (w - c.avgWeight) / 8
}

// Held returns the records the core holds for paused partitions and
// their weight (see Weight).
func (c *Core) Held() (records int, bytes int64) { return c.heldRecords, c.heldBytes }

// hold keeps recs (of tp, which the core paused) behind what it holds of
// tp, in an array of its own.
func (c *Core) hold(tp sluice.TopicPartition, recs []sluice.Record) {
	h := c.held[tp]
	if h == nil {
		h = &heldRecs{}
		c.held[tp] = h
	}
	h.recs = append(h.recs, recs...)
	for i := range recs {
		c.heldBytes += Weight(&recs[i])
	}
	c.heldRecords += len(recs)
}

// heldRecs is what the core holds of one partition, oldest first.
type heldRecs struct{ recs []sluice.Record }

// DropHeld drops what the core holds of tps: a backend calls it when it
// moved the client's position of tps (an exactly-once rewind), so that
// records fetched before are never delivered, and the records from the
// new position on are not taken for repeats (repeats.go). The partitions stay paused
// until Resumable lists them.
func (c *Core) DropHeld(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		delete(c.last, tp) // the client's position moved: records may come again
		h := c.held[tp]
		if h == nil {
			continue
		}
		for i := range h.recs {
			c.heldBytes -= Weight(&h.recs[i])
		}
		c.heldRecords -= len(h.recs)
		delete(c.held, tp)
	}
}

// dropAllHeld drops everything held.
func (c *Core) dropAllHeld() {
	clear(c.held)
	c.heldRecords, c.heldBytes = 0, 0
}

// deliverHeld delivers what the core holds of tp (listed by Resumable),
// one delivery at a time, until none is left or Deliver asks to pause it
// again. It reports whether tp may resume: nothing is held and the last
// Deliver did not ask to pause.
func (c *Core) deliverHeld(tp sluice.TopicPartition) bool {
	for {
		h := c.held[tp]
		if h == nil {
			return true
		}
		n, bytes := c.nextDelivery(h.recs)
		batch := h.recs[:n:n]
		h.recs = h.recs[n:]
		if len(h.recs) == 0 {
			delete(c.held, tp)
		}
		c.heldRecords -= n
		c.heldBytes -= bytes
		pause := c.g.Deliver(tp, batch)
		clear(batch) // the records are the runtime's now (it copied them)
		if pause {
			return false
		}
	}
}

// nextDelivery returns how many records at the head of recs (not empty)
// make one delivery, and their weight: at most MaxBatch records and
// batchBytes bytes, at least one record.
func (c *Core) nextDelivery(recs []sluice.Record) (n int, bytes int64) {
	for n < len(recs) && n < MaxBatch {
		w := Weight(&recs[n])
		if n > 0 && bytes+w > c.lim.batchBytes {
			break
		}
		n, bytes = n+1, bytes+w
	}
	return n, bytes
}
