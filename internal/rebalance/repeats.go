package rebalance

import (
	"time"

	"github.com/sluice-go/sluice"
)

// This file keeps a record the client returns twice in a row from being
// delivered twice. librdkafka 2.11.1 against the embedded broker was
// seen returning a partition's last record once more, right after an
// incremental assignment of other partitions; delivering it again would
// process it twice within one ownership. The core drops a record whose
// offset and timestamp are those of the newest record it added of the
// partition in the same ownership (since the assignment, or since a
// rewind moved the client's position), and logs a warning.
//
// Only that exact repeat is dropped. A record at a lower offset is
// delivered: the client moves its position back on purpose after an
// offset reset (auto.offset.reset once the position is out of range: a
// topic recreated, or a log truncated by an unclean leader election),
// and what it returns then was never delivered, though offsets are
// reused.

// lastAdded is the newest record added of a partition: its offset (-1:
// none) and timestamp.
type lastAdded struct {
	offset    int64
	timestamp time.Time
}

var noneAdded = lastAdded{offset: -1}

// repeatedBy reports whether rec is the record l describes again.
func (l lastAdded) repeatedBy(rec *sluice.Record) bool {
	return rec.Offset == l.offset && rec.Timestamp.Equal(l.timestamp)
}

// lastOf returns the newest record added of tp in its ownership.
func (c *Core) lastOf(tp sluice.TopicPartition) lastAdded {
	if last, ok := c.last[tp]; ok {
		return last
	}
	return noneAdded
}

// repeated drops the record of tp at offset: the client returned the
// newest record added of tp again.
func (c *Core) repeated(tp sluice.TopicPartition, offset int64) {
	c.log.Warn("the client returned a record again; dropped, it was delivered already",
		"topic", tp.Topic, "partition", tp.Partition, "offset", offset)
}
