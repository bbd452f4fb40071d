package rebalance

import "github.com/sluice-go/sluice"

// This file keeps a record the client returns twice from being delivered
// twice. Within one ownership of a partition (from its assignment, or
// from a rewind that moved the client's position) the client returns its
// records in increasing offsets; a record at or below the newest one
// added was delivered already (librdkafka 2.11.1 against the embedded
// broker was seen returning the last record of a partition once more
// right after an incremental assignment of other partitions), and
// delivering it again would process it twice. The core drops it and logs
// a warning, once for each run of such records.

// lastOf returns the offset of the newest record added of tp in its
// ownership, or -1.
func (c *Core) lastOf(tp sluice.TopicPartition) int64 {
	if last, ok := c.last[tp]; ok {
		return last
	}
	return -1
}

// repeated drops a record of tp at offset, which is not after the newest
// record added of tp.
func (c *Core) repeated(tp sluice.TopicPartition, offset int64) {
	if c.repeating {
		return
	}
	c.repeating = true
	c.log.Warn("the client returned a record again; dropped, it was delivered already",
		"topic", tp.Topic, "partition", tp.Partition, "offset", offset, "newest", c.batchLast)
}
