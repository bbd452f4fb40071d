// Package exactlyonce runs a consume-transform-produce pipeline in Kafka
// transactions, independently of the Kafka client: a [sluice.Group]
// decorator ([Group]) that a source wraps around the runtime's group, and
// the small [Txn] interface each backend's transactional producer
// implements. See docs/exactly-once.md for the protocol and its
// guarantees.
package exactlyonce

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
)

// Txn is a backend's transactional producer as the [Group] drives it: the
// producer every produce stage and the dead-letter destination of the Run
// write through. The Group calls its methods from the source's poll
// goroutine only, one at a time, never concurrently with each other.
type Txn interface {
	// Begin starts a transaction: what the producer produces from now on
	// belongs to it. The Group calls it before handing a record to a graph
	// when no transaction is open.
	Begin() error
	// Commit sends offs to the open transaction as the consumer group's
	// offsets (with the consumer's current group metadata, so that the
	// broker refuses them from a member fenced out of the group, KIP-447)
	// and commits the transaction, flushing what is still unsent first.
	// offs may be empty (the transaction then commits only its outputs, or
	// nothing). It returns once the broker answered or ctx is done; an
	// error means the transaction did not commit, or that its outcome is
	// unknown: the Group then calls Abort.
	Commit(ctx context.Context, offs []sluice.Offset) error
	// Abort aborts the open transaction: nothing it produced becomes
	// visible to read_committed readers and none of its offsets commits.
	// After it succeeded the Group rewinds the partitions that had records
	// in the transaction (Rewind) and begins a new one.
	Abort(ctx context.Context) error
	// Rewind moves the consumer's position of every partition of tps back
	// to the group's committed offset (what the last committed
	// transaction committed for it; without a committed offset, where a
	// new owner would start: auto.offset.reset), so that the records of
	// an aborted transaction are consumed and processed again. The Group
	// calls it after Abort succeeded, on the poll goroutine, for owned
	// partitions only, from inside the Group method that aborted (Offsets,
	// Resumable, Revoke or Lose) or, when Deliver aborted, from the
	// Group's next Polled, Offsets or Resumable (the source may hold
	// records it fetched before while Deliver runs; the Group drops every
	// record of tps until then). It has cancelled their graphs before (nothing of
	// them runs any more) and builds new ones once it returns. After it
	// returned the source must not hand the Group any record of tps
	// fetched before the call: the next record of each partition it
	// delivers is the first one at or after the committed offset
	// (librdkafka's seek bumps the partition's version barrier, which
	// drops what was prefetched; a backend that holds fetched records
	// itself drops those of tps; a rebalance.Core holds none while a
	// Group method other than Deliver runs). A paused partition stays
	// paused (the Group lists it in Resumable afterwards). ctx bounds the
	// call (the Group's CommitTimeout). An error stops the Group as a
	// failed Abort does.
	//
	// gone lists the partitions of tps whose topic the broker no longer
	// knows (deleted, and maybe recreated under the same name: the
	// committed offset or the reset offset was answered UNKNOWN_TOPIC_ID
	// or UNKNOWN_TOPIC_OR_PARTITION). They are not sought: the backend
	// drops what it holds of them as for the others and loses them (the
	// Group's Lose) at the latest after its next poll, and their next
	// assignment starts from the group's committed offset of the topic as
	// it then is. Until that Lose the Group gives them no graph and drops
	// every record delivered for them.
	Rewind(ctx context.Context, tps []sluice.TopicPartition) (gone []sluice.TopicPartition, err error)
}

// ErrFatal is wrapped by the error of a [Txn] method when the
// transactional producer cannot be used any more: it was fenced by a
// newer producer with the same transactional id (PRODUCER_FENCED,
// INVALID_PRODUCER_EPOCH) or the client raised a fatal error. The Group
// then stops instead of rewinding: its Err wraps [ErrAborted] and this
// error, and the source's Run returns it. Backends wrap their client's
// error: fmt.Errorf("%w: %w", exactlyonce.ErrFatal, err).
var ErrFatal = errors.New("sluice: the transactional producer is fenced or failed fatally")

// ErrGroupMoved is wrapped by the error of Txn.Commit when the group
// coordinator refused the transaction's offsets because the consumer's
// membership moved on (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a
// rebalance in progress: the partitions are another member's, or about to
// be), or because their topic was deleted (UNKNOWN_TOPIC_ID): the
// transaction must abort, and the partitions' next owner starts from the
// last committed transaction. The Group aborts as for any failed
// commit; at shutdown it is then no failure (Run returns no error for
// it), as a refused final commit is none in at-least-once mode. Backends
// wrap their client's error:
// fmt.Errorf("%w: %w", exactlyonce.ErrGroupMoved, err).
var ErrGroupMoved = errors.New("sluice: the group refused the transaction's offsets (its membership moved on, or their topic was deleted)")

// ErrAborted is wrapped by the error a [Group] reports ([Group.Err]) once
// it stopped: a transaction aborted and could not be followed by a rewind
// (the producer is fenced or failed fatally, see [ErrFatal]; Abort or
// Rewind failed; Begin failed), or a shutdown aborted after a stage error
// stopped Run or after its commit failed (other than [ErrGroupMoved]).
// The consumer must then stop without committing (the source returns the
// error from Run): restarted, every partition starts again from the last
// committed transaction. Any other abort (a partition lost with records in
// the transaction, a failed commit, a revoke whose drain left records
// unfinished or whose barrier passed the drain timeout) is followed by a
// rewind and Run goes on; a shutdown whose drain left records unfinished
// (a retry cut short, the drain timeout) aborts with a warning and no
// error.
var ErrAborted = errors.New("sluice: the exactly-once transaction was aborted")

// DefaultCommitTimeout bounds Txn.Commit and Txn.Abort unless
// [Config.CommitTimeout] says otherwise.
const DefaultCommitTimeout = 10 * time.Second

// holdPause is how many records of a partition the Group holds while a
// commit is due before it asks the source to pause the partition: short
// barriers then do not stop the client's fetching (pausing a partition
// drops what librdkafka prefetched for it), long ones bound what is held
// outside the runtime's budget.
const holdPause = 512

// barrierPoll is how often a revoke's barrier asks the runtime for its
// committable offsets. It polls instead of reading Group.Wake so that the
// source still sees every wake-up (a paused partition waits for one to
// resume).
const barrierPoll = time.Millisecond

// Config configures a [Group].
type Config struct {
	// Logger receives the aborts; nil discards them.
	Logger *slog.Logger
	// CommitTimeout bounds each Txn.Commit and Txn.Abort (0:
	// DefaultCommitTimeout).
	CommitTimeout time.Duration
}

// CommitTimeoutOrDefault is CommitTimeout, or DefaultCommitTimeout when
// it is 0.
func (c Config) CommitTimeoutOrDefault() time.Duration {
	if c.CommitTimeout > 0 {
		return c.CommitTimeout
	}
	return DefaultCommitTimeout
}
