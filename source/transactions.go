package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// transactions is the exactly-once side of one Run: the transactional
// producer bound to the source (confluent.NewTransactionalProducer) and the
// Group wrapping the runtime's. Its zero value (no producer bound) wraps
// nothing.
type transactions struct {
	p   *kafka.Producer
	cfg exactlyonce.Config
	eg  *exactlyonce.Group
	// core is the poll loop's, set once created: a rewind drops what it
	// holds of the partitions rewound.
	core *rebalance.Core
}

// initTransactions initializes the transactions of b, the producer bound
// to k that Run took from k's slot (none when bound is false) (InitTransactions: fences and aborts what an earlier
// producer with the same transactional.id left open), bounded by the
// commit timeout of the exactly-once configuration. Run calls it before
// creating the consumer, so no assignment waits for it; its error names
// the transactional id and librdkafka's (the broker's last answer when
// InitTransactions timed out retrying, COORDINATOR_LOAD_IN_PROGRESS say).
func (k *Source) initTransactions(b exactlyonce.Binding[*kafka.Producer], bound bool) (*transactions, error) {
	if !bound {
		return &transactions{}, nil
	}
	if err := k.cfg.exactlyOnceIsolation(); err != nil { // transactions_isolation.go
		return nil, err
	}
	timeout := b.Config.CommitTimeoutOrDefault()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := b.Producer.InitTransactions(ctx); err != nil {
		return nil, fmt.Errorf("source: initializing the transactional producer's transactions (InitTransactions for %q, within CommitTimeout %v): %w",
			b.TransactionalID, timeout, err)
	}
	return &transactions{p: b.Producer, cfg: b.Config}, nil
}

// wrap returns the Group the poll loop feeds: g, or g committing through
// transactions of t's producer with c's group metadata (the exactly-once
// Group goes beneath g's layers, next to the runtime's group:
// exactlyonce.Insert).
func (t *transactions) wrap(ctx context.Context, c *kafka.Consumer, g sluice.Group) sluice.Group {
	if t.p == nil {
		return g
	}
	feed, eg := exactlyonce.Insert(ctx, g, confluentTxn{p: t.p, c: c, t: t}, t.cfg)
	t.eg = eg
	return feed
}

// confluentTxn is exactlyonce.Txn on a librdkafka transactional producer
// and the consumer whose group metadata fences its offsets (KIP-447).
type confluentTxn struct {
	p *kafka.Producer
	c *kafka.Consumer
	t *transactions
}

func (t confluentTxn) Begin() error { return fatalTxn(t.p.BeginTransaction()) }

func (t confluentTxn) Commit(ctx context.Context, offs []sluice.Offset) error {
	if len(offs) > 0 {
		md, err := t.c.GetConsumerGroupMetadata()
		if err != nil {
			return fmt.Errorf("reading the consumer's group metadata: %w", err)
		}
		parts := kafkaTPs(topicPartitions(offs))
		for i, o := range offs {
			parts[i].Offset = kafka.Offset(o.Next)
		}
		if err := t.p.SendOffsetsToTransaction(ctx, parts, md); err != nil {
			return groupMovedTxn(fatalTxn(fmt.Errorf("sending the offsets to the transaction: %w", err)))
		}
	}
	return fatalTxn(t.p.CommitTransaction(ctx))
}

func (t confluentTxn) Abort(ctx context.Context) error { return fatalTxn(t.p.AbortTransaction(ctx)) }

// fatalTxn marks err with exactlyonce.ErrFatal when librdkafka reports
// the producer unusable: fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH
// are fatal errors of a transactional producer in librdkafka) or any
// other fatal error.
func fatalTxn(err error) error {
	var ke kafka.Error
	if errors.As(err, &ke) && ke.IsFatal() {
		return fmt.Errorf("%w: %w", exactlyonce.ErrFatal, err)
	}
	return err
}

// groupMovedTxn marks err with exactlyonce.ErrGroupMoved when the group
// coordinator refused the offsets because the consumer's membership moved
// on (expectedCommitError: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a
// rebalance in progress, ...), unless it is fatal.
func groupMovedTxn(err error) error {
	if err != nil && !errors.Is(err, exactlyonce.ErrFatal) && expectedCommitError(err) {
		return fmt.Errorf("%w: %w", exactlyonce.ErrGroupMoved, err)
	}
	return err
}

func topicPartitions(offs []sluice.Offset) []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, len(offs))
	for i, o := range offs {
		out[i] = o.TopicPartition
	}
	return out
}
