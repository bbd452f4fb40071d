package sluice

import (
	"context"
	"time"
)

// Source is what feeds records into pipeline.Run and commits the offsets
// that Run reports. Sluice ships five: source.NewSource (a consumer group
// on librdkafka), franz.NewSource (a consumer group on franz-go),
// franz.NewShareSource (a share group, KIP-932, through [AckGroup]),
// follow.New (wraps another source so that it never processes past what
// leader groups committed) and testkit.NewFake (in memory, for tests).
// Users pick one; they do not implement one (package testkit/sourcetest
// checks a source against this contract).
//
// Run calls Source.Run exactly once, with a [Group] that owns the
// per-partition graphs. The source calls the Group's methods only from the
// goroutine running Source.Run (its poll loop), never concurrently.
//
// Contract for implementations:
//   - Assign before Deliver for a partition; Deliver records of one partition
//     in offset order.
//   - When Deliver returns pause=true, stop delivering that partition (pause
//     it) until it is listed by Group.Resumable. Records of it the source
//     already polled are kept by the source and delivered once it is listed
//     (the Kafka sources do); a Group accepts them earlier too, but they
//     then wait outside the in-flight limits.
//   - Commit what Group.Offsets returns, on the source's own interval.
//   - Before giving a partition up gracefully, call Group.Revoke and commit
//     what it returns synchronously; when the partition was lost, call
//     Group.Lose and commit nothing for it. Never commit a partition that
//     was revoked or lost.
//   - When ctx is done, call Group.Shutdown, commit what it returns, close the
//     client and return nil, or an error naming what failed in that
//     shutdown (the final commit, closing the client): Run returns it,
//     joined after its own error if there is one.
//   - Before ctx is done, return a non-nil error only for a fatal client
//     failure; Run then stops every graph still assigned without
//     committing, and returns the error.
type Source interface {
	Run(ctx context.Context, g Group) error
}

// Group is the runtime side of a [Source]: the set of partition graphs that
// pipeline.Run manages. It is implemented by Run and handed to Source.Run; all of
// its methods must be called from the source's poll goroutine only.
type Group interface {
	// Assign builds and starts a graph for each partition. Partitions
	// already assigned are ignored. It returns once every graph runs. An
	// error means a graph failed to build: Run has recorded it and is
	// stopping (ctx will be done), so the source carries on and shuts down
	// gracefully as for any cancellation; partitions built before the
	// failure are assigned and drain on Shutdown.
	Assign(tps []TopicPartition) error

	// Revoke drains the graphs of the given partitions gracefully (bounded
	// by the drain timeout), waits for all their goroutines to exit (those
	// of a function that ignores its context are abandoned after the exit
	// grace, see pipeline.Run) and returns the final offsets to commit: one per
	// revoked partition that completed at least one record since it was
	// assigned. Unknown partitions are ignored.
	Revoke(tps []TopicPartition) []Offset

	// Lose cancels the graphs of the given partitions at once and waits for
	// them to exit (at most the exit grace, see pipeline.Run). Nothing of theirs
	// may be committed afterwards.
	Lose(tps []TopicPartition)

	// Shutdown revokes every assigned partition gracefully, like Revoke.
	Shutdown() []Offset

	// Unfinished returns the partitions that the last Revoke or Shutdown
	// call drained whose graph exited with records it had been fed (handed
	// to its first stage) not finished: a stage error during the drain
	// (only logged, the partition being taken away), a retry the drain cut
	// short, a value a stopping stage let go, the drain timeout. Such a
	// record may have produced part of its outputs, and the records after
	// it all of theirs, while the final offset the call returned stays at
	// it: a source that commits outputs with offsets (exactly-once) must
	// not commit them. Records still queued when the drain began were never
	// fed and do not count. The result is valid until the next Revoke or
	// Shutdown call; empty when every drained graph finished what it was
	// fed. A Group that wraps another returns the wrapped one's.
	Unfinished() []TopicPartition

	// DrainTimeout is the longest one Revoke or Shutdown call drains (the
	// value of pipeline.WithDrainTimeout). A source uses it to size the
	// time its poll loop may spend inside a rebalance (for Kafka, the
	// group's rebalance timeout, max.poll.interval.ms). It is constant
	// for a Run.
	DrainTimeout() time.Duration

	// MaxInFlight and MaxInFlightBytes are the in-flight limits (the
	// values of pipeline.WithMaxInFlight and pipeline.WithMaxInFlightBytes),
	// constant for a Run and safe to call from any goroutine. A source sizes from them
	// what its client prefetches and what it holds for paused partitions.
	// A Group that wraps another (as package follow does) returns the
	// wrapped one's.
	MaxInFlight() int
	MaxInFlightBytes() int64

	// Deliver hands records of one assigned partition, in offset order, to
	// its graph. It never blocks. It returns pause=true when the partition's
	// input queue (or the global in-flight budget) is full: the source must
	// pause the partition until Resumable lists it. Records for a partition
	// that is not assigned are dropped. Deliver copies what it keeps: the
	// source may reuse recs (its array, not the key, value and header bytes
	// the records point to) as soon as Deliver returns. A Group that wraps
	// another (as package follow does) must do the same.
	Deliver(tp TopicPartition, recs []Record) (pause bool)

	// Resumable returns the partitions that Deliver asked to pause and that
	// have room again. Each paused partition is returned once.
	Resumable() []TopicPartition

	// Wake is signalled (capacity one, never closed) when Resumable has
	// something to return or when Offsets has advanced; a source that can
	// select on it avoids polling.
	Wake() <-chan struct{}

	// Offsets returns, for each assigned partition whose processed offset
	// advanced since the previous call, the next offset to commit.
	Offsets() []Offset

	// The remaining methods report what only the source sees, for hooks
	// (metrics, health). They are cheap and never wait for a user's
	// function.

	// Polled reports that a poll of the client completed; call it once
	// per poll. It also completes the values an Each kept (stagekit.Sink)
	// behind a call that blocks, which without it reach the completion
	// hooks only at the next Offsets or admission.
	Polled()
	// Joined reports that the consumer became a member of its group
	// (its first assignment, possibly empty, arrived).
	Joined()
	// Committed reports the outcome of a commit of offs that took took.
	Committed(offs []Offset, took time.Duration, err error)
	// HighWatermark reports the newest known high watermark of tp.
	HighWatermark(tp TopicPartition, high int64)
}
