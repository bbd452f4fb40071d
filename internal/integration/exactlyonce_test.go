package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// eosFanOut is the exactly-once test pipeline: every input record has two
// outputs, "<partition>-<offset>-a" and "-b", produced through produce.
// Every slowEvery-th record (none if 0) takes a millisecond, to keep a
// member mid-stream when it is stopped or revoked.
func eosFanOut(produce func(pipeline.Stream[sluice.Message]) pipeline.End, slowEvery int64) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]sluice.Message, error) {
			if slowEvery > 0 && r.Offset%slowEvery == 0 {
				time.Sleep(time.Millisecond) // work
			}
			id := fmt.Sprintf("%d-%d", r.Partition, r.Offset)
			return []sluice.Message{{Key: r.Key, Value: []byte(id + "-a")}, {Key: r.Key, Value: []byte(id + "-b")}}, nil
		})
		return produce(outs)
	}
}

// eosTimings are a transactional producer's timeouts in the exactly-once
// tests.
type eosTimings struct {
	// txn is the TransactionTimeout: the broker aborts (and fences) a
	// transaction open longer.
	txn time.Duration
	// commit is the CommitTimeout: a commit or abort taking longer fails.
	commit time.Duration
}

// eosGenerous are the timings of a test that is not about them: CI runs
// on 2 cores shared with the other packages' tests, where under load (a
// load average of 17 was seen) a 3s transaction timed out and fenced its
// producer mid-test, and a 2s commit can fail.
var eosGenerous = eosTimings{txn: 15 * time.Second, commit: 10 * time.Second}

// newTxnSource returns a librdkafka source for group/topic and a
// transactional producer bound to it with id txnID and eosGenerous
// timings.
func newTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string) (*source.Source, *confluent.Producer) {
	t.Helper()
	return newTxnSourceWith(t, b, group, topic, txnID, eosGenerous)
}

// newTxnSourceWith is newTxnSource with the timings tm.
func newTxnSourceWith(t *testing.T, b *kafkatest.Broker, group, topic, txnID string, tm eosTimings) (*source.Source, *confluent.Producer) {
	t.Helper()
	src := newSource(t, b, group, topic, nil)
	p, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:    confluent.ProducerConfig{Brokers: b.Addrs(), Logger: kafkatest.Logger(t)},
		TransactionConfig: sink.TransactionConfig{TransactionalID: txnID, TransactionTimeout: tm.txn, CommitTimeout: tm.commit},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return src, p
}

// eosQueue is the partition queue of the exactly-once tests: a commit
// waits for every record in flight, so a shallow queue keeps each
// transaction short (well below its timeout) with 1ms records.
var eosQueue = pipeline.WithPartitionQueue(256)

func sinkProduce(p *confluent.Producer, topic string) func(pipeline.Stream[sluice.Message]) pipeline.End {
	return func(in pipeline.Stream[sluice.Message]) pipeline.End {
		return sink.Produce(in, p, topic, func(m sluice.Message) (sink.Message, error) { return m, nil })
	}
}

// eosTopics creates the input and output topics of an exactly-once test,
// parts partitions each, and fills every input partition with perPartition
// 16-byte records.
func eosTopics(t *testing.T, b *kafkatest.Broker, in, out string, parts int32, perPartition int) {
	t.Helper()
	b.CreateTopic(t, in, parts)
	b.CreateTopic(t, out, parts)
	b.Fill(t, in, perPartition, 16)
}

// checkExactlyOnce ends the output topic with a non-transactional
// sentinel per partition, reads it with isolation.level=read_committed
// up to the sentinels and checks that every input offset below hw has
// exactly its two outputs.
func checkExactlyOnce(t *testing.T, b *kafkatest.Broker, out string, outParts int32, hw map[int32]int64) {
	t.Helper()
	for p := range outParts {
		b.Produce(t, out, sluice.Record{Partition: p, Value: []byte("end")})
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addrs()...),
		kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	seen := map[string]int{}
	ended := map[int32]bool{}
	for len(ended) < int(outParts) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s committed: %v (ended partitions %v)", out, err, ended)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "end" {
				ended[r.Partition] = true
				return
			}
			seen[string(r.Value)]++
		})
	}
	missing, dups := 0, 0
	for p, h := range hw {
		for o := range h {
			for _, s := range []string{"a", "b"} {
				v := fmt.Sprintf("%d-%d-%s", p, o, s)
				switch n := seen[v]; {
				case n == 0:
					missing++
				case n > 1:
					dups++
					if dups <= 5 {
						t.Errorf("output %s committed %d times", v, n)
					}
				}
				delete(seen, v)
			}
		}
	}
	extra := len(seen)
	if missing > 0 || dups > 0 || extra > 0 {
		t.Fatalf("read_committed output of %s: %d outputs missing, %d duplicated, %d unexpected", out, missing, dups, extra)
	}
}

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
