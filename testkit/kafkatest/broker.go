package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker is a Kafka cluster on loopback for tests, examples and tools:
// franz-go's kfake in this process, or Apache Kafka in Java processes
// ([Kind]). It has helpers to create topics, produce records, read them
// back, and inspect committed offsets and groups, which work the same on
// both.
//
// A Broker is safe for concurrent use.
type Broker struct {
	be backend
	kc *kfake.Cluster // from NewKfake or StartBroker only; nil from NewBroker, which may be Apache Kafka
	ac *apacheCluster // Apache Kafka only

	mu   sync.Mutex
	prod *kgo.Client // lazily created producer, closed by Close
	adm  *kgo.Client // lazily created admin client, closed by Close
	done bool
}

// Kind is the broker this Broker runs on.
func (b *Broker) Kind() Kind { return b.be.kind() }

// Close stops the helper clients and the cluster. The shared Apache Kafka
// cluster of [NewBroker] is reset and kept for the next test when the
// test's cleanup closes it, and ended like any other when the test closes
// it before. It is idempotent.
func (b *Broker) Close() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	prod, adm := b.prod, b.adm
	b.prod, b.adm = nil, nil
	b.mu.Unlock()
	if prod != nil {
		prod.Close()
	}
	if adm != nil {
		adm.Close()
	}
	b.be.close()
}

// Addr returns the bootstrap address list, comma separated, suitable for
// librdkafka's bootstrap.servers.
func (b *Broker) Addr() string { return strings.Join(b.be.addrs(), ",") }

// Addrs returns the address of every node.
func (b *Broker) Addrs() []string { return b.be.addrs() }

// Cluster returns the underlying kfake cluster, for fault injection
// (Cluster.Fault, ControlKey). It is there on a Broker from [NewKfake] or
// [StartBroker] only, and panics on one from [NewBroker] even when that
// is kfake: a test that reaches for kfake's controls must say so by
// starting its broker with NewKfake, so that it does not break when the
// tests run on Apache Kafka. For inspection, use the methods that work on
// both (Committed, Group, HighWatermarks, ...).
func (b *Broker) Cluster() *kfake.Cluster {
	if b.kc == nil {
		panic("kafkatest: Cluster: this Broker came from NewBroker, which runs on Apache Kafka when " + EnvBroker +
			"=apache; a test that injects kfake faults starts its broker with NewKfake")
	}
	return b.kc
}

// Kfake returns the kfake cluster when the Broker runs on kfake, whichever
// constructor made it, and false on Apache Kafka. It is for tests that
// use kfake's controls when they are there and do without (or skip, saying
// why) on Apache Kafka.
func (b *Broker) Kfake() (*kfake.Cluster, bool) {
	if k, ok := b.be.(kfakeBackend); ok {
		return k.c, true
	}
	return nil, false
}

// LogTail returns the last lines of Apache Kafka's log on every node
// (empty for kfake).
func (b *Broker) LogTail(lines int) string { return b.be.logTail(lines) }

// CreateTopic creates topic with the given number of partitions, failing
// the test on error.
func (b *Broker) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, partitions, nil); err != nil {
		t.Fatal(err)
	}
}

// CreateTopicContext creates topic with the given number of partitions and
// topic configs (nil for the broker's defaults) and returns once every
// partition has a leader.
func (b *Broker) CreateTopicContext(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	if err := b.be.createTopic(ctx, topic, partitions, configs); err != nil {
		return fmt.Errorf("kafkatest: create topic %q: %w", topic, err)
	}
	return nil
}

func (b *Broker) client(which *(*kgo.Client), opts ...kgo.Opt) (*kgo.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil, errors.New("kafkatest: broker closed")
	}
	if *which == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.be.addrs()...)}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: client: %w", err)
		}
		*which = cl
	}
	return *which, nil
}

func (b *Broker) producer() (*kgo.Client, error) {
	return b.client(&b.prod,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(1<<16),
		kgo.ProducerLinger(time.Millisecond),
	)
}

// Admin returns an admin client of the cluster, which the Broker closes.
func (b *Broker) Admin() (*kadm.Client, error) {
	cl, err := b.client(&b.adm)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// ProduceContext writes recs to topic and waits until all are acknowledged.
// Each record goes to its Partition; Key, Value, Headers and a non-zero
// Timestamp are kept; Topic and Offset are ignored. Records of one
// partition are appended in slice order.
func (b *Broker) ProduceContext(ctx context.Context, topic string, recs ...sluice.Record) error {
	cl, err := b.producer()
	if err != nil {
		return err
	}
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		kr := &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs[i] = kr
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return fmt.Errorf("kafkatest: produce to %q: %w", topic, err)
	}
	return nil
}

// Produce is ProduceContext for tests: it fails the test on error and gives
// up after a minute.
func (b *Broker) Produce(t testing.TB, topic string, recs ...sluice.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.ProduceContext(ctx, topic, recs...); err != nil {
		t.Fatal(err)
	}
}

// Fill produces perPartition records to every partition of topic, with key
// "<partition>-<i>" and a value of valueSize bytes, and returns how many it
// produced. It is meant for load tests and benchmarks.
func (b *Broker) Fill(t testing.TB, topic string, perPartition, valueSize int) int {
	t.Helper()
	parts := b.partitions(t, topic)
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	const chunk = 20000
	recs := make([]sluice.Record, 0, chunk)
	n := 0
	flush := func() {
		if len(recs) > 0 {
			b.Produce(t, topic, recs...)
			n += len(recs)
			recs = recs[:0]
		}
	}
	for i := range perPartition {
		for _, p := range parts {
			recs = append(recs, sluice.Record{Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: value})
			if len(recs) == chunk {
				flush()
			}
		}
	}
	flush()
	return n
}

func (b *Broker) partitions(t testing.TB, topic string) []int32 {
	t.Helper()
	ps := slicesKeys(b.HighWatermarks(t, topic))
	slices.Sort(ps)
	return ps
}

// OffsetsContext returns the log start offset and the high watermark
// (next offset to be written) of every partition of topic.
func (b *Broker) OffsetsContext(ctx context.Context, topic string) (start, end map[int32]int64, err error) {
	start, end, err = b.be.offsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("kafkatest: offsets of %q: %w", topic, err)
	}
	return start, end, nil
}

func (b *Broker) offsets(t testing.TB, topic string) (start, end map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start, end, err := b.OffsetsContext(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return start, end
}

// HighWatermarks returns the high watermark (next offset to be written) of
// every partition of topic.
func (b *Broker) HighWatermarks(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	_, end := b.offsets(t, topic)
	return end
}

// LogStartOffsets returns the log start offset of every partition of topic.
func (b *Broker) LogStartOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	start, _ := b.offsets(t, topic)
	return start
}

// CommittedContext returns the offsets group has committed for topic, by
// partition. Partitions without a commit are absent; an unknown group
// yields an empty map. Offsets a transaction sent to the group count once
// the transaction has committed: on Apache Kafka they are written to the
// group after EndTxn has answered, and CommittedContext waits (until ctx
// ends) while a transaction holds offsets of topic's partitions.
func (b *Broker) CommittedContext(ctx context.Context, group, topic string) (map[int32]int64, error) {
	c, err := b.be.committed(ctx, group, topic)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: committed offsets of group %q on %q: %w", group, topic, err)
	}
	return c, nil
}

// Committed is CommittedContext for tests: it fails the test on error.
func (b *Broker) Committed(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	return mustWithinAMinute(t, func(ctx context.Context) (map[int32]int64, error) { return b.CommittedContext(ctx, group, topic) })
}

// GroupContext describes group: its type, state, epoch and members with
// their assignments. A group the broker does not know has an empty Type.
func (b *Broker) GroupContext(ctx context.Context, group string) (Group, error) {
	cl, err := b.client(&b.adm)
	if err != nil {
		return Group{}, err
	}
	g, err := describeGroup(ctx, cl, kadm.NewClient(cl), group)
	if err != nil {
		return g, fmt.Errorf("kafkatest: describe group %q: %w", group, err)
	}
	return g, nil
}

// Group is GroupContext for tests: it fails the test on error.
func (b *Broker) Group(t testing.TB, group string) Group {
	t.Helper()
	return mustWithinAMinute(t, func(ctx context.Context) (Group, error) { return b.GroupContext(ctx, group) })
}

// ReadAll reads every record of topic, from the log start to the high
// watermark at the time of the call, ordered by partition then offset,
// with read_uncommitted (records of aborted transactions too; transaction
// markers are not records). It fails the test if that takes longer than a
// minute.
func (b *Broker) ReadAll(t testing.TB, topic string) []sluice.Record {
	t.Helper()
	return mustWithinAMinute(t, func(ctx context.Context) ([]sluice.Record, error) { return b.ReadAllContext(ctx, topic) })
}

// ReadAllContext is ReadAll with a context instead of a test.
func (b *Broker) ReadAllContext(ctx context.Context, topic string) ([]sluice.Record, error) {
	return b.read(ctx, topic, false)
}

// ReadCommitted is ReadAll with read_committed: only the records of
// committed transactions and those written outside any transaction. Call
// it once no transaction is open on topic: a read_committed fetch stops
// at the last stable offset, so an open transaction makes it wait until
// the minute is up. It fails the test if that takes longer than a minute.
func (b *Broker) ReadCommitted(t testing.TB, topic string) []sluice.Record {
	t.Helper()
	return mustWithinAMinute(t, func(ctx context.Context) ([]sluice.Record, error) { return b.ReadCommittedContext(ctx, topic) })
}

// ReadCommittedContext is ReadCommitted with a context instead of a test.
func (b *Broker) ReadCommittedContext(ctx context.Context, topic string) ([]sluice.Record, error) {
	return b.read(ctx, topic, true)
}

// read reads topic from the log start to the high watermark at the time
// of the call, with read_committed when committed is set.
func (b *Broker) read(ctx context.Context, topic string, committed bool) ([]sluice.Record, error) {
	lso, hw, err := b.OffsetsContext(ctx, topic)
	if err != nil {
		return nil, err
	}
	start := make(map[int32]kgo.Offset, len(hw))
	for p, h := range hw {
		if h > lso[p] {
			start[p] = kgo.NewOffset().At(lso[p])
		}
	}
	var out []sluice.Record
	if len(start) == 0 {
		return out, nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.be.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchMaxWait(100 * time.Millisecond),
		// Transaction markers come back as records, so a partition whose
		// last offset is a marker is seen to end.
		kgo.KeepControlRecords(),
	}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: read %q: %w", topic, err)
	}
	defer cl.Close()
	done := make(map[int32]bool, len(start))
	for len(done) < len(start) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kafkatest: read %q: %w (read %d records)", topic, ctx.Err(), len(out))
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("kafkatest: read %q[%d]: %w", topic, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] || r.Offset >= hw[r.Partition] {
				return
			}
			if r.Offset+1 >= hw[r.Partition] {
				done[r.Partition] = true
			}
			if r.Attrs.IsControl() {
				return
			}
			rec := sluice.Record{
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
			}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, sluice.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
		})
	}
	slices.SortStableFunc(out, func(x, y sluice.Record) int {
		if x.Partition != y.Partition {
			return int(x.Partition - y.Partition)
		}
		return int(x.Offset - y.Offset)
	})
	return out, nil
}

func slicesKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// mustWithinAMinute returns what f returns given a context of a minute,
// failing t when f fails.
func mustWithinAMinute[T any](t testing.TB, f func(context.Context) (T, error)) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := f(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
