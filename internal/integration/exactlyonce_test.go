package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestExactlyOnceMemberFailsMidStream: member A commits transactions
// mid-stream until the coordinator stops answering its EndTxn (a crash at
// the commit: A's transaction, outputs and offsets sent, is never ended);
// A stops with ErrAborted. B takes over once the broker aborted A's
// transaction after its timeout (until then the group's offsets are
// unstable, KIP-447). A read_committed reader sees every input's outputs
// exactly once. kfake times transactions out like Kafka
// (transaction.timeout.ms, kfake txns.go).
//
// B waits for that timeout, and A for its commit and then its abort to
// time out (CommitTimeout each: the EndTxn fault is retriable, librdkafka
// retries until then), so A's timings are shorter than eosGenerous, to
// keep the test under about 10s: still several times a transaction's
// length here (50ms commit interval, shallow queues) under load.
func TestExactlyOnceMemberFailsMidStream(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), "eos", parts, perPartition)
	hw := e.hw(t)

	srcA, pA := newTxnSourceWith(t, e.b, e.group, e.in, "eos-A", eosTimings{txn: 8 * time.Second, commit: 4 * time.Second})
	a := startConsumer(t, "A", srcA, eosFanOut(sinkProduce(pA, e.out), 2), eosQueue)
	e.waitMidStream(t, perPartition, a)
	faults := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TxnID: "eos-A", Err: kerr.CoordinatorLoadInProgress, Count: -1})
	waitStopped(t, a, "its EndTxn failing")
	faults.Remove()
	wantAborted(t, a, false)
	t.Logf("A stopped: %v; committed %v", a.Err(), e.b.Committed(t, e.group, e.in))

	bc := e.start(t, librdkafkaTxn, "B", "eos-B", 0)
	e.finish(t, hw, bc)
}

// TestExactlyOnceRevokeUnderLoad: B joins while A is mid-stream; A's
// revoke commits its transaction before the client lets the partitions go
// (with franz, TxnOffsetCommit sent from the revoke callback's hand-off,
// on the poll loop), and B starts from there: no output is committed
// twice, none is missing. It runs on both clients.
func TestExactlyOnceRevokeUnderLoad(t *testing.T) {
	eachCase(t, txnClients, txnClient.String, func(t *testing.T, c txnClient) {
		const parts, perPartition = 4, 6000
		e := newEOSCase(t, kafkatest.NewBroker(t), "eosr", parts, 100)

		obsA := newGroupObserver()
		srcA, produceA := c.member(t, e.b, e.group, e.in, "eosr-A")
		a := startConsumer(t, "A", srcA, eosFanOut(produceA(e.out), 1), pipeline.WithHooks(obsA), eosQueue)
		e.waitInputCommitted(t)
		e.b.Fill(t, e.in, perPartition, 16) // A is mid-stream in these when B joins
		hw := e.hw(t)
		srcB, produceB := c.member(t, e.b, e.group, e.in, "eosr-B")
		bc := startConsumer(t, "B", srcB, eosFanOut(produceB(e.out), 1), eosQueue)
		waitFor(t, "A revoking partitions to B", func() bool { return obsA.revoked.Load() > 0 }, a, bc)
		if done, _ := committedSum(t, e.b, e.group, e.in); done >= parts*(perPartition+100) {
			t.Fatalf("A finished the input (%d records) before B joined: the revoke was not under load", done)
		}
		e.finish(t, hw, a, bc)
	})
}

// TestExactlyOnceRewindAfterFailedCommit: the coordinator answers one of
// member A's EndTxn(commit) mid-stream with an error (UNKNOWN_SERVER_ERROR,
// which librdkafka makes an abortable transaction error: the commit fails,
// AbortTransaction succeeds). A aborts, rewinds the partitions of the
// aborted transaction to the group's committed offsets, rebuilds their
// graphs (the runtime reports them lost, then assigned) and keeps running
// to the end of the input; a read_committed reader sees every input's two
// outputs exactly once, and the committed offsets reach the high
// watermarks. kfake answers a faulted request without processing it, so
// the transaction is still open when A aborts it, as with a real broker
// failing the EndTxn.
func TestExactlyOnceRewindAfterFailedCommit(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), "eosw", parts, perPartition)
	hw := e.hw(t)

	obs := newGroupObserver()
	a := e.start(t, librdkafkaTxn, "A", "eosw-A", 2, pipeline.WithHooks(obs))
	e.waitMidStream(t, perPartition, a)
	failNextCommit(t, e.b, "eosw-A")
	waitFor(t, "A rewinding partitions (lost, then assigned again)", func() bool { return obs.lost.Load() > 0 }, a)
	e.waitInputCommitted(t)
	a.stop(t) // Run returns nil: the abort did not stop it
	if got := obs.assigned.Load(); got <= parts {
		t.Fatalf("A assigned %d partitions, want more than %d (the rewound ones again)", got, parts)
	}
	checkExactlyOnce(t, e.b, e.out, parts, hw)
}

// TestExactlyOnceFencedMemberStops: another producer takes member A's
// transactional id mid-stream (InitProducerID bumps its epoch: A is
// fenced, which librdkafka reports as a fatal error). A's Run stops with
// an error wrapping ErrAborted and ErrFatal instead of rewinding; B, with an id of its
// own, takes over and a read_committed reader sees every input's outputs
// exactly once.
func TestExactlyOnceFencedMemberStops(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewBroker(t), "eosf", parts, perPartition)
	hw := e.hw(t)

	a := e.start(t, librdkafkaTxn, "A", "eosf-A", 2)
	waitFor(t, "A committing transactions on every partition", func() bool { return len(e.b.Committed(t, e.group, e.in)) == parts }, a)
	fence(t, e.b, "eosf-A")
	waitStopped(t, a, "being fenced")
	// The fence surfaces first in a produce stage (the transaction's
	// AddPartitionsToTxn fails), and the abort that follows is refused:
	// both are librdkafka fatal errors, which the abort marks ErrFatal.
	wantAborted(t, a, true)

	bc := e.start(t, librdkafkaTxn, "B", "eosf-B", 0)
	e.finish(t, hw, bc)
}

// fence initializes a producer id for txnID, as a second producer with
// the same transactional id starting does: the previous producer's epoch
// is fenced. It retries while the coordinator ends the transaction the
// previous producer left open (CONCURRENT_TRANSACTIONS).
func fence(t *testing.T, b *kafkatest.Broker, txnID string) {
	t.Helper()
	cl := kafkaClient(t, b)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = 3000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			return
		case ctx.Err() != nil:
			t.Fatalf("fencing %s: %v", txnID, err)
		case !errors.Is(err, kerr.ConcurrentTransactions) && !kerr.IsRetriable(err):
			t.Fatalf("fencing %s: %v", txnID, err)
		}
		time.Sleep(10 * time.Millisecond) // the coordinator is ending the open transaction
	}
}

// TestExactlyOnceInitRefused: the transaction coordinator answers every
// InitProducerID with COORDINATOR_LOAD_IN_PROGRESS. The librdkafka source
// initializes its producer's transactions before it creates its consumer,
// so no assignment can wait for it: Run returns at CommitTimeout with an
// error naming the transactional id and the broker's error, and the
// group was never joined. (The franz backend's client joins before its
// producer id is initialized: franz/transaction_start_test.go.)
func TestExactlyOnceInitRefused(t *testing.T) {
	t.Parallel()
	const commit = 3 * time.Second
	b := kafkatest.NewKfake(t)
	const in, out, group = "eosi-in", "eosi-out", "eosi-g"
	eosTopics(t, b, in, out, 2, 10)
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: -1})
	joined := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Observe: true, Count: -1})
	src, p := newTxnSourceWith(t, b, group, in, "eosi-A", eosTimings{txn: eosGenerous.txn, commit: commit})

	began := time.Now()
	a := startConsumer(t, "A", src, eosFanOut(sinkProduce(p, out), 0))
	select {
	case <-a.Done():
	case <-time.After(commit + wait):
		t.Fatalf("Run did not return within %v of CommitTimeout", wait)
	}
	err, took := a.Err(), time.Since(began)
	var ke kafka.Error
	if !errors.As(err, &ke) || ke.Code() != kafka.ErrCoordinatorLoadInProgress || !strings.Contains(err.Error(), `"eosi-A"`) {
		t.Fatalf("Run = %v, want an error naming the transactional id and wrapping COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	if took < commit-time.Second { // librdkafka's timer ends a few µs early
		t.Fatalf("Run returned after %v, well before CommitTimeout (%v): the retriable error was not retried", took, commit)
	}
	if refused.Hits() == 0 || joined.Hits() != 0 {
		t.Fatalf("InitProducerID refused %d times, JoinGroup sent %d times: want some, and none", refused.Hits(), joined.Hits())
	}
}

// eosSideValue is a value of eosSideCall's graphs: an output, or the side
// call of the record at off.
type eosSideValue struct {
	msg  sluice.Message
	side bool
	part int32
	off  int64
}

// eosSideCall is the pipeline of the drain tests: every input record has
// the two outputs of eosFanOut, produced through produce, and a side call
// on a branch of its own (stages.Route). The side call of partition 0's
// record at failAt fails once with a transient error, closing failed; its
// retry waits an hour, so only a drain cuts it short (the stage error is
// then only logged: the partition is being taken away), while the other
// branch goes on producing the outputs of that record and of those after
// it. fed counts the records of partition 0 whose outputs reached the
// produce branch.
func eosSideCall(produce func(pipeline.Stream[sluice.Message]) pipeline.End, failAt int64, failed chan<- struct{}, fed *atomic.Int64) pipeline.Builder {
	var once atomic.Bool
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		vals := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]eosSideValue, error) {
			id := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
			return []eosSideValue{
				{msg: sluice.Message{Key: r.Key, Value: []byte(id + "-a")}},
				{msg: sluice.Message{Key: r.Key, Value: []byte(id + "-b")}, part: r.Partition, off: r.Offset},
				{side: true, part: r.Partition, off: r.Offset},
			}, nil
		})
		branches := stages.Route(vals, 2, func(v eosSideValue) int {
			if v.side {
				return 1
			}
			return 0
		})
		msgs := stages.Map(branches[0], func(_ context.Context, v eosSideValue) (sluice.Message, error) {
			if v.part == 0 && v.msg.Value[len(v.msg.Value)-1] == 'b' {
				fed.Add(1)
			}
			return v.msg, nil
		})
		calls := stages.Each(branches[1], func(_ context.Context, v eosSideValue) error {
			if v.part == 0 && v.off == failAt && once.CompareAndSwap(false, true) {
				close(failed)
				return errors.New("side service unavailable")
			}
			return nil
		}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Hour, Max: time.Hour}))
		return pipeline.All(produce(msgs), calls)
	}
}

// eosDrainUnfinished: member A's side call fails once for partition 0's
// offset 5 and A is stopped during its retry wait, after every record of
// partition 0 reached the produce branch: the shutdown drain cuts the
// retry short, record 5 never finishes, while the outputs of 5 to 19 were
// produced in A's open transaction. A must abort it (Run returns nil:
// nothing is at risk) rather than commit those outputs with partition 0's
// offset at 5. B, started after, finishes the input: read_committed
// readers see every input's two outputs exactly once.
func eosDrainUnfinished(t *testing.T, b *kafkatest.Broker, in, out, group string,
	start func(name string, build func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder) *consumer) {
	const parts, perPartition = 2, 20
	eosTopics(t, b, in, out, parts, perPartition)
	hw := b.HighWatermarks(t, in)

	failed := make(chan struct{})
	var fed atomic.Int64
	a := start("A", func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
		return eosSideCall(produce, 5, failed, &fed)
	})
	waitFor(t, "A's side call failing at offset 5 and every record of partition 0 fed", func() bool {
		select {
		case <-failed:
			return fed.Load() == perPartition
		default:
			return false
		}
	}, a)
	if err := a.Stop(t); err != nil {
		t.Fatalf("A's Run = %v, want nil: its last transaction aborted, nothing is at risk", err)
	}
	t.Logf("A stopped; committed %v", b.Committed(t, group, in))

	bc := start("B", func(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
		return eosFanOut(produce, 0)
	})
	b.WaitCommitted(t, group, in, b.HighWatermarks(t, in))
	bc.stop(t)
	checkExactlyOnce(t, b, out, parts, hw)
}

// TestExactlyOnceShutdownDrainUnfinished is eosDrainUnfinished on both
// clients (confluent.NewTransactionalProducer, franz.NewTransactionalProducer).
func TestExactlyOnceShutdownDrainUnfinished(t *testing.T) {
	eachCase(t, txnClients, txnClient.String, func(t *testing.T, c txnClient) {
		b := kafkatest.NewBroker(t)
		const in, out, group = "eosd-in", "eosd-out", "eosd-g"
		eosDrainUnfinished(t, b, in, out, group, func(name string, build func(func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder) *consumer {
			src, produce := c.member(t, b, group, in, "eosd-"+name)
			return startConsumer(t, name, src, build(produce(out)), eosQueue)
		})
	})
}
