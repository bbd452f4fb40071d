package follow

import (
	"context"

	"github.com/sluice-go/sluice"
)

// Leaders reads how far the leader consumer groups got: for each partition,
// the lowest offset committed by any of them (the next offset each will
// consume, so every record below it was processed by all of them).
// franz.NewLeaders and source.NewLeaders read it from a Kafka cluster.
//
// The follower calls Committed from one goroutine of its own, one call at a
// time, every interval (see [WithInterval]) and right after partitions are
// assigned, with every partition the follower owns at that moment; ctx is
// done when the call's timeout ([WithRequestTimeout]) passed or the
// follower stopped, and Committed must return promptly then.
//
// In the map it returns, a partition that is absent or has a negative
// offset is one that some leader group has not committed at all: the
// follower delivers none of its records. A non-nil error means the offsets
// could not be read: the follower ignores the map, keeps the offsets it
// read before (values the leaders did commit), logs the error and asks
// again at the next interval. The follower does not modify the map nor
// keep it after the call.
type Leaders interface {
	Committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error)
}

// LeadersFunc adapts a function to [Leaders], for tests and for leaders
// kept somewhere other than Kafka.
type LeadersFunc func(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error)

// Committed calls f.
func (f LeadersFunc) Committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	return f(ctx, tps)
}
