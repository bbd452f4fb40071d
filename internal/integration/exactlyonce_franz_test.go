package integration

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The exactly-once tests of exactlyonce_test.go on the franz backend
// (franz.NewTransactionalProducer: the source's kgo client is the
// transactional producer).

// newFranzTxnSource returns a franz source for group/topic and a
// transactional producer bound to it with id txnID and test timings. A
// transaction holds everything one poll delivered (kgo hands over whole
// fetches, Fill's batches are large): much more than librdkafka's, whose
// poll stops at a pause. It must end within its 20s timeout.
func newFranzTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string) (*franz.Source, *franz.Producer) {
	t.Helper()
	src := newFranzSource(t, b, group, topic)
	return src, newFranzTxnProducer(t, src, txnID, 20*time.Second)
}

// newFranzTxnProducer returns a transactional producer bound to src with
// id txnID and transaction timeout txn; its commit timeout, not what the
// tests are about, is generous under load.
func newFranzTxnProducer(t *testing.T, src *franz.Source, txnID string, txn time.Duration) *franz.Producer {
	t.Helper()
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
		ProducerConfig:    franz.ProducerConfig{Logger: kafkatest.Logger(t)},
		TransactionConfig: sink.TransactionConfig{TransactionalID: txnID, TransactionTimeout: txn, CommitTimeout: eosGenerous.commit},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func franzProduce(p *franz.Producer, topic string) func(pipeline.Stream[sluice.Message]) pipeline.End {
	return func(in pipeline.Stream[sluice.Message]) pipeline.End {
		return sink.Produce(in, p, topic, func(m sluice.Message) (sluice.Message, error) { return m, nil })
	}
}

// TestFranzExactlyOnceFailedCommitMidStream: the coordinator answers one
// of member A's EndTxn(commit) mid-stream with UNKNOWN_SERVER_ERROR (the
// outcome is unknown to kgo: it fails the producer id, and the abort that
// follows reloads it, InitProducerID bumping the epoch, which aborts the
// transaction on the broker). The fault is not fatal, so A aborts,
// rewinds in place and goes on (an OnCommitted hook sees its next commit
// succeed; A stopping fails the test), and a read_committed reader sees
// every input's two outputs exactly once and the commits reach the high
// watermarks. kfake answers a
// faulted request without processing it (faults.go: Fault; 26_end_txn.go:
// handleEndTxn checks the fault before doEnd), so the transaction is still
// open when A aborts it; on Kafka the lost EndTxn may have committed, and
// the InitProducerID of the abort waits for the outcome
// (CONCURRENT_TRANSACTIONS) before the rewind reads the committed offsets
// (RequireStable): the test covers the first case only.
//
// The commit fails inside a Deliver (the Group commits once a due
// barrier is reached there), while the poll loop holds a record in hand
// (rebalance.Core.Add appends it after flushing the batch whose Deliver
// aborted). The test checks that this record does not reach the
// partition's new graph before the seek, where it would be processed
// again and its input committed twice: the core defers such a rewind to
// the next Polled (exactlyonce/rewind_deferred.go).
func TestFranzExactlyOnceFailedCommitMidStream(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), "feos", parts, perPartition)

	commits := newCommitRecovery()
	a := e.start(t, franzTxn, "A", "feos-A", 2, pipeline.WithHooks(commits))
	e.waitInputCommitted(t)
	e.b.Fill(t, e.in, perPartition, 16) // mid-stream: A commits these in transactions
	hw := e.hw(t)
	failNextCommit(t, e.b, "feos-A").Remove()
	// The failed EndTxn leaves kgo's transaction unconfirmed; the abort
	// (kgoTxn.Abort) reloads the producer id, which ends it, and succeeds:
	// the fault is no ErrFatal, so A rewinds in place and commits again.
	select {
	case <-commits.Recovered():
	case <-a.Done():
		t.Fatalf("A stopped after its failed commit (%v): %v; want a rewind in place", commits.Failed(), a.Err())
	case <-time.After(wait):
		t.Fatalf("A committed nothing within %v of its failed commit (%v)", wait, commits.Failed())
	}
	commits.wantFailedByFault(t)
	e.finish(t, hw, a)
}

// TestFranzExactlyOnceZombieFenced: A2 starts with A's transactional id
// while A still runs (a zombie: A's replacement started before A died).
// A2's InitProducerID bumps the id's epoch: A's next transactional
// request is refused (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH), which
// is fatal, and A stops with ErrAborted and ErrFatal without committing
// anything more. A2 finishes the input; the output is exactly once.
//
// Two kfake deviations let a zombie fence its successor here, where Kafka
// refuses the zombie:
//   - A's refused produce opens a transaction: kfake keeps one producer id
//     per transactional id, and 00_produce.go handleProduce calls
//     txns.go pids.get, which adds the partition to the transaction and
//     starts it (maybeStart) before the epoch check answers
//     INVALID_PRODUCER_EPOCH. That transaction is A2's producer id's: if
//     A2 does not end it within TransactionTimeout, kfake times it out
//     (pids.updateTimer) and bumps the epoch, fencing A2. Kafka's
//     coordinator checks the epoch before it adds a partition
//     (TransactionCoordinator.handleAddPartitionsToTransaction answers
//     PRODUCER_FENCED) and opens nothing. On kfake the test relies on A's
//     revoke barrier giving up at the stage error of the refused produce
//     (exactlyonce TestRevokeBarrierGivesUpOnStageError) rather than
//     holding the partitions the rebalance took from A for the whole
//     drain timeout (20s): A2 gets them at once and ends that transaction
//     with its first commit seconds later, well within TransactionTimeout.
//   - 22_init_producer_id.go doInitProducerID accepts a stale epoch and
//     bumps it, where Kafka answers PRODUCER_FENCED
//     (TransactionMetadata.prepareIncrementProducerEpoch): a zombie's
//     KIP-360 recovery would fence A2. franz's Abort sends none from a
//     fenced producer (kgoTxn.Abort).
func TestFranzExactlyOnceZombieFenced(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewBroker(t), "feosz", parts, perPartition)

	a := e.start(t, franzTxn, "A", "feosz-A", 2)
	e.waitInputCommitted(t)
	a2 := e.start(t, franzTxn, "A2", "feosz-A", 2)
	e.b.Fill(t, e.in, perPartition, 16) // A's next transaction is refused
	hw := e.hw(t)
	waitStopped(t, a, "A2 starting with its transactional id")
	wantAborted(t, a, true)
	e.finish(t, hw, a2)
}

// TestFranzExactlyOnceNothingProduced: every record is filtered out, so no
// transaction produces anything (kgo's EndTransaction would then send no
// EndTxn): the offsets still commit, with plain OffsetCommits, up to the
// high watermarks; the source leaves no transaction open (the group's
// offsets are stable: a second member's offset fetch, RequireStable,
// answers at once and it starts at the commits, processing nothing).
func TestFranzExactlyOnceNothingProduced(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 2, 500
	e := newEOSCase(t, kafkatest.NewBroker(t), "feosn", parts, perPartition)
	srcA, pA := newFranzTxnSource(t, e.b, e.group, e.in, "feosn-A")
	a := startConsumer(t, "A", srcA, producesNothing(franzProduce(pA, e.out)))
	e.waitInputCommitted(t)
	a.stop(t)

	e.b.Fill(t, e.in, 1, 16) // one more record per partition: B gets exactly these
	seen := newOffsets(e.hw(t))
	srcB := newFranzSource(t, e.b, e.group, e.in)
	bc := startConsumer(t, "B", srcB, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error { seen.add(r.Partition, r.Offset); return nil })
	})
	e.waitInputCommitted(t)
	bc.stop(t)
	if n := seen.total.Load(); n != parts {
		t.Fatalf("B processed %d records, want the %d added after A's commits", n, parts)
	}
	if hw := e.b.HighWatermarks(t, e.out); hw[0]+hw[1] != 0 {
		t.Fatalf("output high watermarks %v, want nothing produced", hw)
	}
}
