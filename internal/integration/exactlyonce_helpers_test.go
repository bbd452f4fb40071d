package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// eosCase is an exactly-once test's topics and group on its broker:
// input "<name>-in" and output "<name>-out" of parts partitions each,
// group "<name>-g".
type eosCase struct {
	b              *kafkatest.Broker
	in, out, group string
	parts          int32
}

// newEOSCase creates the topics of the exactly-once test name on b and
// fills every input partition with perPartition 16-byte records.
func newEOSCase(t *testing.T, b *kafkatest.Broker, name string, parts int32, perPartition int) *eosCase {
	t.Helper()
	e := &eosCase{b: b, in: name + "-in", out: name + "-out", group: name + "-g", parts: parts}
	eosTopics(t, b, e.in, e.out, parts, perPartition)
	return e
}

// hw returns the input's high watermarks.
func (e *eosCase) hw(t *testing.T) map[int32]int64 { return e.b.HighWatermarks(t, e.in) }

// waitInputCommitted waits until the group committed the input up to its
// high watermarks.
func (e *eosCase) waitInputCommitted(t *testing.T) {
	t.Helper()
	e.b.WaitCommitted(t, e.group, e.in, e.hw(t))
}

// waitMidStream waits until the group has a commit on every input
// partition adding up to at least a fifth of the input's perPartition
// records a partition, failing t if a stops first.
func (e *eosCase) waitMidStream(t *testing.T, perPartition int, a *consumer) {
	t.Helper()
	waitFor(t, "A committing transactions on every partition", func() bool {
		n, k := committedSum(t, e.b, e.group, e.in)
		return k == int(e.parts) && n >= int64(e.parts)*int64(perPartition)/5
	}, a)
}

// finish waits until the group committed up to the input's high
// watermarks, stops cs (each Run returning nil) and checks that a
// read_committed reader sees exactly the two outputs of every input
// offset below hw.
func (e *eosCase) finish(t *testing.T, hw map[int32]int64, cs ...*consumer) {
	t.Helper()
	e.waitInputCommitted(t)
	for _, c := range cs {
		c.stop(t)
	}
	checkExactlyOnce(t, e.b, e.out, e.parts, hw)
}

// produceTo is an exactly-once member's Produce stage writing its input
// to topic.
type produceTo func(topic string) func(pipeline.Stream[sluice.Message]) pipeline.End

// txnClient makes exactly-once members with one client: a source of group
// on topic in with a transactional producer of id txnID bound to it, and
// that producer's Produce stage.
type txnClient struct {
	name   string
	member func(t *testing.T, b *kafkatest.Broker, group, in, txnID string) (sluice.Source, produceTo)
}

func (c txnClient) String() string { return c.name }

// librdkafkaTxn makes members with newTxnSource, franzTxn with
// newFranzTxnSource.
var (
	librdkafkaTxn = txnClient{"librdkafka", func(t *testing.T, b *kafkatest.Broker, group, in, txnID string) (sluice.Source, produceTo) {
		src, p := newTxnSource(t, b, group, in, txnID)
		return src, func(topic string) func(pipeline.Stream[sluice.Message]) pipeline.End { return sinkProduce(p, topic) }
	}}
	franzTxn = txnClient{"franz", func(t *testing.T, b *kafkatest.Broker, group, in, txnID string) (sluice.Source, produceTo) {
		src, p := newFranzTxnSource(t, b, group, in, txnID)
		return src, func(topic string) func(pipeline.Stream[sluice.Message]) pipeline.End { return franzProduce(p, topic) }
	}}
)

// txnClients are both clients' exactly-once members.
var txnClients = []txnClient{librdkafkaTxn, franzTxn}

// start starts the exactly-once member name of e on client c: a source of
// e's group on e's input with a transactional producer of id txnID,
// writing its outputs to e's output with eosFanOut (slowing every
// slowEvery-th record), with eosQueue and opts.
func (e *eosCase) start(t *testing.T, c txnClient, name, txnID string, slowEvery int64, opts ...pipeline.Option) *consumer {
	t.Helper()
	src, produce := c.member(t, e.b, e.group, e.in, txnID)
	return startConsumer(t, name, src, eosFanOut(produce(e.out), slowEvery), append(opts, eosQueue)...)
}

// committedSum is the sum of the group's committed offsets on topic, and
// how many partitions have one.
func committedSum(t *testing.T, b *kafkatest.Broker, group, topic string) (n int64, parts int) {
	c := b.Committed(t, group, topic)
	for _, o := range c {
		n += o
	}
	return n, len(c)
}

// failNextCommit makes the coordinator answer the next EndTxn(commit) of
// txnID with UNKNOWN_SERVER_ERROR, without processing it, and waits until
// it did.
func failNextCommit(t *testing.T, b *kafkatest.Broker, txnID string) *kfake.FaultHandle {
	t.Helper()
	fault := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TxnID: txnID, Err: kerr.UnknownServerError,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("%s's EndTxn(commit) was not faulted: %v", txnID, err)
	}
	return fault
}

// waitStopped fails t unless c's Run returns within wait of what.
func waitStopped(t *testing.T, c *consumer, what string) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatalf("%s did not stop within %v of %s", c.name, wait, what)
	}
}

// wantAborted fails t unless c's Run returned an error wrapping
// exactlyonce.ErrAborted and, if fatal, exactlyonce.ErrFatal.
func wantAborted(t *testing.T, c *consumer, fatal bool) {
	t.Helper()
	err := c.Err()
	switch {
	case !errors.Is(err, exactlyonce.ErrAborted):
		t.Fatalf("%s's Run = %v, want an error wrapping ErrAborted", c.name, err)
	case fatal && !errors.Is(err, exactlyonce.ErrFatal):
		t.Fatalf("%s's Run = %v, want an error wrapping ErrAborted and ErrFatal", c.name, err)
	}
}

// producesNothing is a pipeline whose produce stage gets no message:
// every record is filtered out before it.
func producesNothing(produce func(pipeline.Stream[sluice.Message]) pipeline.End) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		none := stages.Filter(in, func(sluice.Record) bool { return false })
		msgs := stages.Map(none, func(_ context.Context, r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Value: r.Value}, nil
		})
		return produce(msgs)
	}
}

// commitRecovery is a hook that tells when a consumer committed again
// after a failed commit: the failure did not stop it.
type commitRecovery struct {
	failed    atomic.Pointer[error] // the first failed commit, nil before it
	recovered chan struct{}         // closed at the first commit succeeding after it
	once      sync.Once
}

func newCommitRecovery() *commitRecovery {
	return &commitRecovery{recovered: make(chan struct{})}
}

// OnCommitted implements sluice.HookCommitted.
func (c *commitRecovery) OnCommitted(offs []sluice.Offset, _ time.Duration, err error) {
	switch {
	case err != nil:
		c.failed.CompareAndSwap(nil, &err)
	case c.failed.Load() != nil && len(offs) > 0:
		c.once.Do(func() { close(c.recovered) })
	}
}

// Recovered is closed once a commit of offsets succeeded after a failed
// one.
func (c *commitRecovery) Recovered() <-chan struct{} { return c.recovered }

// waitRecovered waits until a commit succeeds after a failed one; a
// stopping first, or no such commit within wait, fails t, naming the
// failed commit as failure.
func (c *commitRecovery) waitRecovered(t *testing.T, a *consumer, failure string) {
	t.Helper()
	select {
	case <-c.Recovered():
	case <-a.Done():
		t.Fatalf("%s stopped after its %s (%v): %v; want it to go on", a.name, failure, c.Failed(), a.Err())
	case <-time.After(wait):
		t.Fatalf("%s committed nothing within %v of its %s (%v)", a.name, wait, failure, c.Failed())
	}
}

// Failed returns the first failed commit's error, nil if none failed.
func (c *commitRecovery) Failed() error {
	if err := c.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// wantFailedByFault fails t unless the first failed commit wraps the
// UNKNOWN_SERVER_ERROR that failNextCommit makes the coordinator answer.
func (c *commitRecovery) wantFailedByFault(t *testing.T) {
	t.Helper()
	if err := c.Failed(); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("the failed commit = %v, want an error wrapping %v (failNextCommit's)", err, kerr.UnknownServerError)
	}
}

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
