package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
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
	commits.waitRecovered(t, a, "failed commit")
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

// newFranzShutdownTxnSource is newFranzTxnSource committing only at
// shutdown: its commit interval outlasts the test, so the one commit of
// A's Run is the one a fault refuses. The transaction is open from A's
// first produce to its shutdown: the broker must not time it out before.
func newFranzShutdownTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string) (*franz.Source, *franz.Producer) {
	t.Helper()
	src := newFranzSourceEvery(t, b, group, topic, time.Hour)
	return src, newFranzTxnProducer(t, src, txnID, time.Minute)
}

// TestFranzExactlyOnceShutdownCommitRefusedByTheGroup: member A's
// shutdown commit is refused by the group coordinator as if the group had
// moved on (ILLEGAL_GENERATION on every partition, as when the other
// members stopping at the same time started a rebalance): with output,
// the TxnOffsetCommit is refused; with none, the plain OffsetCommit of
// the transaction that delivered nothing. A aborts the transaction and
// its Run returns nil (exactlyonce.ErrGroupMoved), as a refused final
// commit does in at-least-once mode. Nothing of A's is committed: the
// group has no offsets, and B, started after, processes the whole input,
// each input's outputs read_committed exactly once. kfake answers a
// faulted TxnOffsetCommit/OffsetCommit partition without storing it
// (faults.go), as Kafka's coordinator refuses a stale generation before
// it writes.
func TestFranzExactlyOnceShutdownCommitRefusedByTheGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		produce bool
		key     kmsg.Key
	}{
		{"TxnOffsetCommit", true, kmsg.TxnOffsetCommit},
		{"OffsetCommit with no output", false, kmsg.OffsetCommit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shutdownCommitRefused(t, tc.produce, tc.key)
		})
	}
}

func shutdownCommitRefused(t *testing.T, produce bool, key kmsg.Key) {
	const parts, perPartition = 2, 300
	e := newEOSCase(t, kafkatest.NewKfake(t), "feoss", parts, perPartition)
	hw := e.hw(t)

	srcA, pA := newFranzShutdownTxnSource(t, e.b, e.group, e.in, "feoss-A")
	build := eosFanOut(franzProduce(pA, e.out), 0)
	if !produce {
		build = producesNothing(franzProduce(pA, e.out))
	}
	delivered := newCommitLog(e.b, e.group, e.in)
	a := startConsumer(t, "A", srcA, build, pipeline.WithHooks(delivered), eosQueue)
	waitFor(t, "A receiving every record", func() bool { return delivered.deliveredAtLeast(parts, perPartition) }, a)
	fault := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{key}, Group: e.group, Err: kerr.IllegalGeneration, Count: -1})
	if err := a.Stop(t); err != nil {
		t.Fatalf("A's Run = %v, want nil: the group refused the shutdown commit (moved on), the transaction aborted", err)
	}
	if fault.Hits() == 0 {
		t.Fatalf("A's shutdown sent no %v: the fault refused nothing", key)
	}
	fault.Remove()
	if c := e.b.Committed(t, e.group, e.in); len(c) != 0 {
		t.Fatalf("group commits after A %v, want none (A's only commit was refused)", c)
	}

	bc := e.start(t, franzTxn, "B", "feoss-B", 0)
	e.finish(t, hw, bc)
}

// TestFranzExactlyOnceRewindFindsTopicGone: the group refuses one of
// member A's transactions' offsets mid-stream with UNKNOWN_TOPIC_ID (the
// topic was deleted), and the rewind that follows the abort reads the
// committed offsets with the same answer, as it does on Apache Kafka
// while the client still holds a deleted topic's ID. A's Run goes on: the
// topic's partitions are lost (no graph, nothing committed) and consumed
// anew from the group's committed offsets, so a read_committed reader
// sees every input's two outputs exactly once and the commits reach the
// high watermarks.
func TestFranzExactlyOnceRewindFindsTopicGone(t *testing.T) {
	t.Parallel()
	commits := testRewindGone(t, "feosg", franzTxn, nil, func(e *eosCase) func() int {
		return answerTopicGone(e.b, e.group)
	})
	if err := commits.Failed(); !errors.Is(err, kerr.UnknownTopicID) {
		t.Fatalf("the failed commit = %v, want an error wrapping %v", err, kerr.UnknownTopicID)
	}
}

// As TestFranzExactlyOnceRewindFindsTopicGone, but the rewind's read of
// the committed offsets answers UNKNOWN_TOPIC_OR_PARTITION for partition
// 1 only, every time (a transient answer for a topic that was never
// deleted; the others are answered normally): A's Run goes on, and every
// input is output exactly once (read_committed) with the commits reaching
// the high watermarks.
func TestFranzExactlyOnceRewindFindsOnePartitionGone(t *testing.T) {
	t.Parallel()
	testRewindGone(t, "feosg1", franzTxn, nil, faultRewindRead([]int32{1}, kerr.UnknownTopicOrPartition))
}

// As TestFranzExactlyOnceRewindFindsTopicGone in a KIP-848 group: the
// topic's partitions are lost, purged and subscribed again, and the group
// (consumer protocol) must assign them anew.
func TestFranzExactlyOnceRewindFindsTopicGone848(t *testing.T) {
	t.Parallel()
	franz848Txn := txnClient{"franz848", func(t *testing.T, b *kafkatest.Broker, group, in, txnID string) (sluice.Source, produceTo) {
		src := newFranzSource(t, b, group, in, franz848()...)
		p := newFranzTxnProducer(t, src, txnID, 20*time.Second)
		return src, func(topic string) func(pipeline.Stream[sluice.Message]) pipeline.End { return franzProduce(p, topic) }
	}}
	check := func(e *eosCase) {
		if got := groupType(t, e.b, e.group); got != "consumer" {
			t.Fatalf("group type %q, want consumer (KIP-848)", got)
		}
	}
	testRewindGone(t, "feosg848", franz848Txn, check, faultRewindRead([]int32{0, 1, 2, 3}, kerr.UnknownTopicID))
}

// testRewindGone runs member A of case name on client c (4 partitions of
// 3000 records) and, once A committed the input, runs check (if any),
// makes the broker answer the rewind's reads of the committed offsets with
// answerRewind (which returns how many reads it answered so far) and
// refuses the next transaction's offsets with UNKNOWN_TOPIC_ID. It checks
// that A goes on, that the rewind's read was answered, and that every
// input is output exactly once; it returns A's commit hook.
func testRewindGone(t *testing.T, name string, c txnClient, check func(*eosCase), answerRewind func(*eosCase) (answered func() int)) *commitRecovery {
	t.Helper()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), name, parts, perPartition)
	commits := newCommitRecovery()
	a := e.start(t, c, "A", name+"-A", 2, pipeline.WithHooks(commits))
	e.waitInputCommitted(t)
	if check != nil {
		check(e)
	}
	answered := answerRewind(e)
	refused := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.TxnOffsetCommit}, Group: e.group, Err: kerr.UnknownTopicID})
	defer refused.Remove()
	e.b.Fill(t, e.in, perPartition, 16) // mid-stream: the next transaction's offsets are refused
	hw := e.hw(t)
	commits.waitRecovered(t, a, "refused commit")
	if answered() == 0 {
		t.Fatal("the rewind's read of the committed offsets was not answered as the test set it to be")
	}
	e.finish(t, hw, a)
	return commits
}

// faultRewindRead returns an answerRewind for testRewindGone that makes
// the broker answer code, every time, for parts in every stable
// OffsetFetch sent outside the membership (the rewind's), for as long as
// the test's broker runs.
func faultRewindRead(parts []int32, code *kerr.Error) func(*eosCase) func() int {
	return func(e *eosCase) func() int {
		f := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: e.group, Partitions: parts,
			Err: code, Count: -1, When: func(r kmsg.Request) bool {
				req := r.(*kmsg.OffsetFetchRequest)
				return req.RequireStable && len(req.Groups) == 1 && req.Groups[0].MemberID == nil
			}})
		return f.Hits
	}
}

// answerTopicGone makes b answer every stable OffsetFetch of group sent
// outside the membership (kgo's own reads name the member; the rewind's
// does not) with UNKNOWN_TOPIC_ID on each partition, as Kafka answers
// for the ID of a deleted topic, and returns the count of those answers so far.
func answerTopicGone(b *kafkatest.Broker, group string) func() int {
	var n atomic.Int64
	b.Cluster().ControlKey(int16(kmsg.OffsetFetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := r.(*kmsg.OffsetFetchRequest)
		if !req.RequireStable || len(req.Groups) != 1 || req.Groups[0].Group != group || req.Groups[0].MemberID != nil {
			return nil, nil, false
		}
		n.Add(1)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version = req.Version
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = group
		for _, t := range req.Groups[0].Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
		return resp, nil, true
	})
	return func() int { return int(n.Load()) }
}
