package franz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// kgoTxn is exactlyonce.Txn on the source's kgo client, which is also the
// transactional producer's (KIP-447: the offsets go to the transaction
// with the consumer's member id and generation, and the producer that
// produced the outputs sends them).
//
// kgo (v1.22.3) commits offsets in a transaction only through
// GroupTransactSession.End, which commits the client's polled positions
// (not the runtime's finished offsets), aborts whenever a revoke was seen
// (a graceful revoke could never commit) and deadlocks when called while
// a revoke callback waits for the poll loop. So Commit sends the offsets
// itself (AddOffsetsToTxn unless the cluster runs KIP-890 part 2, then
// TxnOffsetCommit) and ends the transaction with kgo's EndTransaction.
// EndTransaction sends no EndTxn for a transaction in which no record was
// delivered: the offsets of such a transaction are committed with a plain
// OffsetCommit instead (there is no output to keep atomic with them).
//
// Every method runs on the source's poll goroutine (the Group calls it).
type kgoTxn struct {
	p     *Producer
	cl    *kgo.Client // set by start, before the poll loop
	txnID string
	group string
	// instanceID is kgo.InstanceID, if set (static membership).
	instanceID *string
	// kip890p2: the cluster's transaction.version is 2 or more and its
	// TxnOffsetCommit is v5 or more, as kgo decides at BeginTransaction:
	// TxnOffsetCommit then adds the group to the transaction itself, and
	// AddOffsetsToTxn is not sent. Found once, at Run's start.
	kip890p2 bool
	// ids are the poll loop's: the IDs the topics' records were fetched
	// under (TxnOffsetCommit v6 names topics by ID; checkTopicIDs compares
	// them with the broker's).
	ids *fetchedIDs
	// coord is the poll loop's: the group's coordinator, where
	// checkTopicIDs sends its check (topic_ids.go).
	coord *groupCoordinator
	// rewound are the partitions Rewind moved back since the last poll:
	// their records in the fetches at hand predate the seek.
	rewound map[sluice.TopicPartition]bool
	// core is the poll loop's, set before it runs: Rewind drops what it
	// holds of the partitions rewound (fetched before the seek).
	core *rebalance.Core
	// gone is the poll loop's: Rewind marks there the topics it finds
	// gone, whose partitions the loop then loses (runner.topicsGone).
	gone *goneTopics
}

var _ exactlyonce.Txn = (*kgoTxn)(nil)

// Begin implements exactlyonce.Txn: kgo's BeginTransaction, and the count
// of the records delivered in the transaction starts at zero.
func (t *kgoTxn) Begin() error {
	t.p.txn.delivered.Store(0)
	return fatalTxn(t.cl.BeginTransaction())
}

// Commit implements exactlyonce.Txn: it flushes, checks that the topics
// of offs still have the IDs their records were fetched under
// (checkTopicIDs), sends offs to the transaction (or, when nothing was
// delivered in it, ends it and commits offs plainly) and ends the
// transaction with a commit. Offsets the group refused because the
// membership moved on or their topic was deleted (the TxnOffsetCommit, or
// the plain OffsetCommit of a transaction with no output), and offsets
// checkTopicIDs found of a deleted or recreated topic, are marked
// exactlyonce.ErrGroupMoved, unless fatal: the Group aborts (nothing the
// transaction produced becomes visible), and at shutdown Run returns no
// error for it.
func (t *kgoTxn) Commit(ctx context.Context, offs []sluice.Offset) error {
	return fatalTxn(t.commit(ctx, offs))
}

func (t *kgoTxn) commit(ctx context.Context, offs []sluice.Offset) error {
	if err := t.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flushing the transaction's records: %w", err)
	}
	if err := t.checkTopicIDs(ctx, offs); err != nil {
		return groupMovedTxn(err)
	}
	if t.p.txn.delivered.Load() == 0 {
		// kgo sends no EndTxn for a transaction none of whose records was
		// acknowledged (under KIP-890 part 2 it aborts one whose produces
		// all failed): offsets sent to it would stay in a transaction
		// that never ends.
		if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("ending a transaction with no output: %w", err)
		}
		return groupMovedTxn(t.commitPlain(ctx, offs))
	}
	if len(offs) > 0 {
		if err := t.sendOffsets(ctx, offs); err != nil {
			return groupMovedTxn(err)
		}
	}
	if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("committing the transaction (EndTxn): %w", err)
	}
	return nil
}

// Abort implements exactlyonce.Txn: the buffered records fail
// (kgo.ErrAborting), and the transaction ends with an abort.
func (t *kgoTxn) Abort(ctx context.Context) error {
	if _, _, perr := t.cl.ProducerID(ctx); errors.Is(perr, kerr.InvalidProducerEpoch) || errors.Is(perr, kerr.ProducerFenced) {
		// Fenced (a produce or request refused for an old epoch): kgo's
		// EndTransaction would try to recover the id (KIP-588), and an
		// InitProducerID from a zombie would fence its successor on a
		// broker that accepts a stale epoch (kfake does). Stop instead.
		_ = t.cl.AbortBufferedRecords(ctx)
		return fmt.Errorf("%w: the producer id was fenced: %w", exactlyonce.ErrFatal, perr)
	}
	err := t.cl.AbortBufferedRecords(ctx)
	if err != nil {
		err = fmt.Errorf("aborting the buffered records: %w", err)
	}
	if eerr := t.cl.EndTransaction(ctx, kgo.TryAbort); eerr != nil {
		err = errors.Join(err, fmt.Errorf("aborting the transaction (EndTxn): %w", eerr))
	}
	return fatalTxn(err)
}

// fatalTxn marks err with exactlyonce.ErrFatal when the producer cannot
// be used any more: fenced by a newer producer with its transactional id
// (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, which kgo does not recover
// from under KIP-890 part 2), not authorized, or its client closed.
func fatalTxn(err error) error {
	if err == nil {
		return nil
	}
	for _, f := range []error{kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.TransactionalIDAuthorizationFailed, kgo.ErrClientClosed} {
		if errors.Is(err, f) {
			return fmt.Errorf("%w: %w", exactlyonce.ErrFatal, err)
		}
	}
	return err
}

// groupMovedTxn marks err with exactlyonce.ErrGroupMoved when it holds a
// group coordinator's refusal of the offsets because the consumer's
// membership moved on (groupMovedError: ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_INSTANCE_ID, a rebalance
// in progress, ...) or because their topic was deleted (UNKNOWN_TOPIC_ID,
// or errTopicReplaced from checkTopicIDs: the offsets are the deleted
// topic's, and the source loses its partitions once kgo reports the ID
// unknown or checkTopicIDs marked the topic gone), unless the producer failed fatally (fatalTxn wins:
// such a producer cannot abort). Commit calls it on the errors of the
// offsets' commit only: EndTxn goes to the transaction coordinator, which
// knows nothing of the group's generations.
func groupMovedTxn(err error) error {
	if err != nil && !errors.Is(fatalTxn(err), exactlyonce.ErrFatal) && refusedOffsets(err) {
		return fmt.Errorf("%w: %w", exactlyonce.ErrGroupMoved, err)
	}
	return err
}

// checkTopicIDs asks the broker for the current IDs of the topics of offs
// (replacedTopics) and returns nil when each is the ID its records were
// fetched under (ids). A topic the broker no longer knows, or knows
// under another ID (deleted, maybe recreated under its name), is marked
// gone (the poll loop loses its partitions and consumes it anew; Rewind
// treats its partitions as gone) and the error wraps errTopicReplaced:
// before TxnOffsetCommit v6 and OffsetCommit v10 the broker would take
// its offsets, by name, as the new topic's. A topic whose ID the answer
// does not tell, or a failed request, is an error too: nothing is
// committed unchecked.
func (t *kgoTxn) checkTopicIDs(ctx context.Context, offs []sluice.Offset) error {
	replaced, unverified, err := replacedTopics(ctx, t.cl, t.coord.of(t.cl), t.ids.of(offsetTopics(offs)))
	if err != nil {
		return err
	}
	if len(replaced) > 0 {
		for _, topic := range replaced {
			t.gone.add(topic)
		}
		return fmt.Errorf("the offsets of %v are not committed: %w", replaced, errTopicReplaced)
	}
	var errs []error
	for _, uerr := range unverified {
		errs = append(errs, uerr)
	}
	return errors.Join(errs...)
}

// sendOffsets adds the group to the open transaction (AddOffsetsToTxn,
// before KIP-890 part 2) and sends offs with the consumer's member id and
// generation (TxnOffsetCommit), which the coordinator refuses from a
// member fenced out of the group.
func (t *kgoTxn) sendOffsets(ctx context.Context, offs []sluice.Offset) error {
	id, epoch, err := t.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("reading the producer id: %w", err)
	}
	if !t.kip890p2 {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = t.txnID, id, epoch, t.group
		err := concurrentRetry(ctx, func() error {
			resp, err := add.RequestWith(ctx, t.cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.ErrorCode)
		})
		if err != nil {
			return fmt.Errorf("adding the group's offsets to the transaction (AddOffsetsToTxn): %w", err)
		}
	}
	member, generation := t.cl.GroupMetadata()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = t.txnID, t.group, id, epoch
	req.MemberID, req.Generation, req.InstanceID = member, generation, t.instanceID
	topics, by := byTopic(offs, func(o sluice.Offset) string { return o.Topic })
	ids := t.ids.of(topics)
	for _, topic := range topics {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		for _, o := range by[topic] {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = o.Partition, o.Next
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil {
		return fmt.Errorf("sending the offsets to the transaction (TxnOffsetCommit): %w", err)
	}
	var errs []error
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
				errs = append(errs, fmt.Errorf("%s/%d: %w", topicName(rt.Topic, rt.TopicID, req), rp.Partition, perr))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the transaction's offset commit (TxnOffsetCommit, member %q, generation %d) was refused: %w", member, generation, errors.Join(errs...))
	}
	return nil
}

// commitPlain commits offs with a plain OffsetCommit (CommitOffsetsSync),
// for a transaction that delivered nothing.
func (t *kgoTxn) commitPlain(ctx context.Context, offs []sluice.Offset) error {
	if len(offs) == 0 {
		return nil
	}
	m := make(map[string]map[int32]kgo.EpochOffset)
	for _, o := range offs {
		if m[o.Topic] == nil {
			m[o.Topic] = make(map[int32]kgo.EpochOffset)
		}
		m[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Next}
	}
	var err error
	t.cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		rejected, rerr := rejections(offs, resp, cerr)
		err = rerr
		for _, r := range rejected {
			err = errors.Join(err, fmt.Errorf("%s/%d: %w", r.Offset.Topic, r.Offset.Partition, r.Err))
		}
	})
	if err != nil {
		return fmt.Errorf("committing the offsets of a transaction with no output (OffsetCommit): %w", err)
	}
	return nil
}

// concurrentRetry runs fn again, after a short wait, while it fails with
// CONCURRENT_TRANSACTIONS (the coordinator still completing the previous
// transaction), until ctx ends.
func concurrentRetry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// topicName names a response's topic: its name, or (v6 answers by id) the
// request's topic with that id.
func topicName(name string, id [16]byte, req *kmsg.TxnOffsetCommitRequest) string {
	if name != "" {
		return name
	}
	for _, rt := range req.Topics {
		if rt.TopicID == id {
			return rt.Topic
		}
	}
	return fmt.Sprintf("topic id %x", id)
}
