// Package follow makes a consumer that never runs ahead of other consumer
// groups on the same topic: a follower. [New] wraps any source (the
// follower's own consumer group) so that a record of partition (T, p) at
// offset o reaches the follower's stages only once every named leader
// group has committed an offset above o on (T, p). It is a higher-level
// consumer: it changes what the source delivers, not what the stages see,
// and commits, rebalances, backpressure and shutdown work as without it.
//
// Use it for a step that may only see what the main consumers have
// finished: post-processing, auditing, a cache warmed from what is already
// in the database. The leaders' offsets come from a [Leaders]:
// franz.NewLeaders (franz-go) or source.NewLeaders (librdkafka) read them
// from the group coordinators; [LeadersFunc] adapts anything else.
//
// How it works: a goroutine reads the leaders' committed offsets of every
// owned partition every interval ([WithInterval], default 500ms) and right
// after an assignment. Deliver hands on the records below them and holds
// the rest, answering pause=true so the source pauses the partition and
// keeps polling: a follower waiting for stalled leaders stays in its
// group. When a read moves the leaders' offsets the follower's Wake
// fires, Resumable hands the held records on and lists the partition
// again. Revoke, Lose and Shutdown drop the held records of the
// partitions they give up (never delivered, so nothing is committed past
// them). A failed read keeps the offsets read before.
//
// Over a source running exactly-once (a transactional producer bound to
// it), the source puts its transactional group beneath the follower's,
// next to the runtime's: only the records the follower hands on enter a
// transaction, a partition whose leaders stall holds up none of the
// other partitions' commits, and a transaction that aborts and rewinds
// partitions makes the follower drop what it holds of them (fetched
// again from the committed offsets).
//
// [Hook] reports, per partition, the leaders' offset, how many records
// are held back and how far behind the leaders the follower is
// ([Status].Lag); metrics.Metrics implements it (sluice_follower_*
// gauges).
// docs/follow.md has what it guarantees, what it costs and when to use it.
package follow
