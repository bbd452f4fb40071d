package rebalance

import (
	"context"
	"time"

	"github.com/sluice-go/sluice"
)

// Backend is what a client-specific source implements for its [Core].
// The core calls every method on the poll goroutine, except Commit, which
// runs on a goroutine of its own, one call at a time.
type Backend interface {
	// Poll polls the client once, waiting up to timeout (or until ctx is
	// done) for the first event, serves what it got (records through
	// Core.Add and Core.Flush, rebalances through Core.Assigned,
	// Core.Revoked and Core.Lost), reports the poll with Group.Polled and returns a fatal
	// error that ends Run, or nil.
	Poll(ctx context.Context, timeout time.Duration) error
	// Fail handles the fatal error Poll returned and returns Run's error:
	// typically Core.LoseAll, then Core.LeaveAndClose.
	Fail(err error) error
	// Interval runs once per commit interval, after the core collected
	// Group.Offsets (the confluent backend reports high watermarks then).
	Interval()

	// Commit commits offs synchronously and returns once the client has
	// the final answer (after its own retries, bounded as the client
	// allows). err is a request-level error, meaning nothing was
	// committed; otherwise rejected lists the partitions the broker
	// refused, each with its cause. It runs on a goroutine of its own,
	// never two at a time, and may outlive the Core's wait for it.
	Commit(offs []sluice.Offset) (rejected []Rejected, err error)
	// ExpectedCommitError reports whether err is a commit rejection
	// expected around rebalances (the group moved on or is rebalancing)
	// or for the partitions of a deleted topic: logged at debug level,
	// and no error for the final commit.
	ExpectedCommitError(err error) bool
	// RetriableCommitError reports whether a final commit rejected with
	// err may succeed once the rebalance in progress completes
	// (REBALANCE_IN_PROGRESS, and for a client that sends commits during
	// a join and sync, ILLEGAL_GENERATION). The retry drops the
	// partitions revoked or lost meanwhile, and ends at the deadline.
	RetriableCommitError(err error) bool
	// BeforeFinalCommit runs before each attempt of the final commit: a
	// backend serves the rebalances that came meanwhile, so that the
	// partitions given up drop out of it, and may lose partitions it
	// must not commit (Core.Lost). deadline is the final commit's: what
	// it asks the cluster is bounded by it.
	BeforeFinalCommit(deadline time.Time)
	// WaitToRetryCommit waits d before the final commit is retried after
	// a retriable refusal, keeping the client served if it must be.
	WaitToRetryCommit(d time.Duration)

	// Pause stops fetching tp (Deliver asked for it). On error the core
	// logs it and asks again after the next Deliver.
	Pause(tp sluice.TopicPartition) error
	// Resume resumes fetching tps. On error the core retries them on
	// every round of the poll loop while they are owned.
	Resume(tps []sluice.TopicPartition) error
	// GaveUpPaused is told the partitions a revoke or a loss gave up
	// while the core had them paused (or their resume had failed): the
	// client may keep them paused across a later assignment, so the
	// backend resumes them now or when they are assigned again. It runs
	// inside Core.Revoked and Core.Lost, before the drain or the cancel.
	GaveUpPaused(tps []sluice.TopicPartition)

	// Leave leaves the group, until deadline at the latest, on shutdown
	// (and after a fatal error Fail handles). Nothing is owned any more
	// when it is called. A non-nil error ends the shutdown without
	// closing the client (the client is unusable) and is returned.
	Leave(deadline time.Time) error
	// Close closes the client, waiting until deadline at the latest
	// (Core.CloseClient does the bounded wait), and returns an error
	// when it did not finish in time.
	Close(deadline time.Time) error
}

// Rejected is one partition a commit did not commit: the offset that was
// sent for it and the broker's reason.
type Rejected struct {
	Offset sluice.Offset
	Err    error
}
