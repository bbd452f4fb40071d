package sluice

import "context"

// OffsetStore is a place other than the consumer group that keeps where
// each partition resumes: a sink that stores the offsets of what it wrote
// in its own transactions (sink/txsink, sink/postgres). Users do not call
// it; they hand the same store to the sink and to the source's Config
// ([GroupConfig].OffsetStore, which source.Config and franz.Config embed),
// and the source consults it on every assignment.
//
// The Kafka sources call Claim on their poll goroutine, once per
// assignment, with the partitions newly assigned to this member, after
// the group gave them and before any of their records is fetched or
// their graphs are built: the sink's stages of those partitions may
// read what Claim recorded as soon as they start. A partition in the
// returned map starts at that offset instead of the group's committed
// one; a partition missing from it starts where the group's committed
// offset (or, without one, the reset policy) says. The map names only
// partitions of tps, each with an offset of 0 or more: the Kafka sources
// treat any other reply as a failed Claim. The group's commits
// still follow the runtime's progress as usual, so lag tools keep
// working; the store is the truth.
//
// Claim is also where a store fences the member that held the
// partitions before: after Claim returned, that member's writes must be
// refused. A Claim error is fatal: Run stops and returns it (a store
// retries what it considers transient itself, within the group's
// rebalance timeout). Claim is never called concurrently for one Run;
// revokes and losses are not reported to the store (the next owner's
// Claim fences this member).
type OffsetStore interface {
	Claim(ctx context.Context, group string, tps []TopicPartition) (map[TopicPartition]int64, error)
}
