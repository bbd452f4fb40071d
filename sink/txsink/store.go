package txsink

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice"
)

// ErrFenced is returned by Tx.StoreOffset when the partition's owner
// epoch is no longer the one the position was claimed with: another
// member claimed the partition since.
var ErrFenced = errors.New("txsink: partition claimed by a newer owner (fenced)")

// Position is what a [Store] keeps for one partition of one group.
type Position struct {
	// Epoch is the owner epoch: Claim raises it, StoreOffset accepts
	// only the current one.
	Epoch int64
	// Next is the offset the partition resumes from; -1 when nothing
	// was stored yet.
	Next int64
	// Written is the newest offset whose value was written; -1 when
	// none. Values of records at or before it are not written again.
	Written int64
	// Invalid are offsets at or past Next, at most Written, whose values
	// the store refused: they are written again on resume.
	Invalid []int64
}

// Store is a transactional destination: a database and the offsets table
// it keeps next to the user's rows. A [Writer] calls it from the stage
// goroutines of many partitions at once, and Claim from the source's poll
// goroutine; every method must be safe for concurrent use.
//
// Errors are classified by marking them (see the package documentation):
// sluice.Invalid for a value's fault (Tx.Write, Tx.WriteOne and
// Tx.Commit only), sluice.Permanent when the store cannot be used,
// anything else is transient. An error names the table or object it
// concerns.
type Store[T any] interface {
	// Claim makes the caller the owner of each partition of tps in group:
	// it raises the partition's owner epoch (creating its position with
	// Next and Written -1 when there is none) in one transaction and
	// returns the positions after the raise. Once it returned, a
	// StoreOffset with an earlier epoch fails with ErrFenced, even one
	// whose transaction started before the Claim.
	Claim(ctx context.Context, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]Position, error)
	// Read returns the stored position of tp in group, without changing
	// it; ok is false when there is none. Like Claim, it waits for a
	// transaction that stored the position and has not ended (in SQL, a
	// locking read), so that after a Commit whose outcome is unknown it
	// tells for good whether that transaction committed.
	Read(ctx context.Context, group string, tp sluice.TopicPartition) (p Position, ok bool, err error)
	// Begin starts a transaction.
	Begin(ctx context.Context) (Tx[T], error)
}

// Tx is one transaction of a [Store], used by one goroutine.
type Tx[T any] interface {
	// Write writes values. After an error the transaction can only be
	// rolled back.
	Write(ctx context.Context, values []T) error
	// WriteOne writes v so that its failure leaves the transaction
	// usable (in SQL, inside a savepoint): the Writer calls it value by
	// value to find which values of a batch the store refuses. A value
	// the store would refuse only at Commit (a deferred constraint) is
	// refused here already (in SQL, SET CONSTRAINTS ALL IMMEDIATE).
	WriteOne(ctx context.Context, v T) error
	// StoreOffset stores p as tp's position in group, if p.Epoch is still
	// the partition's owner epoch; otherwise it returns ErrFenced (and
	// the transaction can only be rolled back). The check and the write
	// are atomic with the transaction's commit: a Claim between this
	// call and Commit makes Commit fail or wait for it, never lets both
	// owners commit.
	StoreOffset(ctx context.Context, group string, tp sluice.TopicPartition, p Position) error
	// Commit commits the transaction. An error marked sluice.Invalid
	// says a value was refused at commit (a constraint checked at commit)
	// and nothing committed: the Writer then writes the batch again
	// value by value (WriteOne). Another error may leave it unknown
	// whether it committed (the connection dropped during the commit):
	// the Writer then reads the position back (Store.Read) before it
	// writes the batch again.
	Commit(ctx context.Context) error
	// Rollback ends the transaction without committing; it is called
	// after any error, and must be safe to call after a failed Commit.
	Rollback(ctx context.Context) error
}
