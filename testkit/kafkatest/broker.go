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

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/pipeline"
)

// Broker is an in-process Kafka cluster (franz-go's kfake) listening on
// loopback, with helpers to create topics, produce records and inspect
// committed offsets. It is meant for tests and examples only: it keeps
// everything in memory and implements only what kfake implements.
//
// A Broker is safe for concurrent use.
type Broker struct {
	c *kfake.Cluster

	mu   sync.Mutex
	prod *kgo.Client // lazily created producer, closed by Close
	done bool
}

// BrokerOption configures [StartBroker] and [NewBroker].
type BrokerOption func(*brokerConfig)

type brokerConfig struct {
	nodes int
	opts  []kfake.Opt
}

// WithNodes sets the number of broker nodes in the cluster (default 1).
// Partition leadership is spread over the nodes.
func WithNodes(n int) BrokerOption {
	return func(c *brokerConfig) { c.nodes = n }
}

// WithTopic creates topic with the given number of partitions when the
// broker starts.
func WithTopic(topic string, partitions int32) BrokerOption {
	return func(c *brokerConfig) { c.opts = append(c.opts, kfake.SeedTopics(partitions, topic)) }
}

// WithKfakeOptions passes raw kfake options through, for what the other
// options do not cover (SASL, TLS, group session timeouts, ...).
func WithKfakeOptions(opts ...kfake.Opt) BrokerOption {
	return func(c *brokerConfig) { c.opts = append(c.opts, opts...) }
}

// StartBroker starts a cluster on 127.0.0.1 with random ports (kfake's
// default listener). The caller
// must Close it. Use [NewBroker] in tests.
func StartBroker(opts ...BrokerOption) (*Broker, error) {
	cfg := brokerConfig{nodes: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.nodes < 1 {
		return nil, fmt.Errorf("kafkatest: WithNodes(%d): need at least one node", cfg.nodes)
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(cfg.nodes),
		// librdkafka's default session timeout is 45s; tests lower it,
		// so allow down to one second.
		kfake.GroupMinSessionTimeout(time.Second),
		// KIP-848 groups: members learn about assignment changes on
		// their next heartbeat; Kafka's 5s default makes tests slow.
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}),
	}
	kopts = append(kopts, cfg.opts...)
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start broker: %w", err)
	}
	return &Broker{c: c}, nil
}

// NewBroker starts a cluster like [StartBroker] and closes it at t.Cleanup.
// It fails the test if the cluster cannot start.
func NewBroker(t testing.TB, opts ...BrokerOption) *Broker {
	t.Helper()
	b, err := StartBroker(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// Close stops the producer client and the cluster. It is idempotent.
func (b *Broker) Close() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	prod := b.prod
	b.prod = nil
	b.mu.Unlock()
	if prod != nil {
		prod.Close()
	}
	b.c.Close()
}

// Addr returns the bootstrap address list, comma separated, suitable for
// librdkafka's bootstrap.servers.
func (b *Broker) Addr() string { return strings.Join(b.c.ListenAddrs(), ",") }

// Addrs returns the address of every node.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Cluster returns the underlying kfake cluster, for fault injection
// (Cluster.Fault) and group inspection.
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// CreateTopic creates topic with the given number of partitions, failing
// the test on error.
func (b *Broker) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	if err := b.c.CreateTopic(topic, partitions, nil); err != nil {
		t.Fatalf("kafkatest: create topic %q: %v", topic, err)
	}
}

func (b *Broker) producer() (*kgo.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil, errors.New("kafkatest: broker closed")
	}
	if b.prod == nil {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(b.c.ListenAddrs()...),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MaxBufferedRecords(1<<16),
			kgo.ProducerLinger(time.Millisecond),
		)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: producer: %w", err)
		}
		b.prod = cl
	}
	return b.prod, nil
}

// ProduceContext writes recs to topic and waits until all are acknowledged.
// Each record goes to its Partition; Key, Value, Headers and a non-zero
// Timestamp are kept; Topic and Offset are ignored. Records of one
// partition are appended in slice order.
func (b *Broker) ProduceContext(ctx context.Context, topic string, recs ...pipeline.Record) error {
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
func (b *Broker) Produce(t testing.TB, topic string, recs ...pipeline.Record) {
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
	recs := make([]pipeline.Record, 0, chunk)
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
			recs = append(recs, pipeline.Record{Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: value})
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
	infos := b.c.PartitionInfos(topic)
	if len(infos) == 0 {
		t.Fatalf("kafkatest: topic %q does not exist", topic)
	}
	ps := make([]int32, 0, len(infos))
	for _, pi := range infos {
		ps = append(ps, pi.Partition)
	}
	slices.Sort(ps)
	return ps
}

// HighWatermarks returns the high watermark (next offset to be written) of
// every partition of topic.
func (b *Broker) HighWatermarks(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	infos := b.c.PartitionInfos(topic)
	if len(infos) == 0 {
		t.Fatalf("kafkatest: topic %q does not exist", topic)
	}
	out := make(map[int32]int64, len(infos))
	for _, pi := range infos {
		out[pi.Partition] = pi.HighWatermark
	}
	return out
}

// Committed returns the offsets group has committed for topic, by
// partition. Partitions without a commit are absent; an unknown group
// yields an empty map.
func (b *Broker) Committed(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	out := make(map[int32]int64)
	gi := b.c.GroupInfo(group)
	if gi == nil {
		return out
	}
	for p, c := range gi.Commits[topic] {
		out[p] = c.Offset
	}
	return out
}

// ReadAll reads every record of topic, from the log start to the high
// watermark at the time of the call, ordered by partition then offset. It
// fails the test if that takes longer than a minute.
func (b *Broker) ReadAll(t testing.TB, topic string) []pipeline.Record {
	t.Helper()
	hw := b.HighWatermarks(t, topic)
	start := make(map[int32]kgo.Offset, len(hw))
	remaining := 0
	for p, h := range hw {
		lso := b.c.PartitionInfo(topic, p).LogStartOffset
		if h > lso {
			start[p] = kgo.NewOffset().At(lso)
			remaining++
		}
	}
	var out []pipeline.Record
	if remaining == 0 {
		return out
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.c.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kafkatest: read %q: %v", topic, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(map[int32]bool, len(start))
	for len(done) < remaining {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kafkatest: read %q: %v (read %d records)", topic, ctx.Err(), len(out))
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("kafkatest: read %q[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] || r.Offset >= hw[r.Partition] {
				return
			}
			rec := pipeline.Record{
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
			}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, pipeline.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
			if r.Offset+1 >= hw[r.Partition] {
				done[r.Partition] = true
			}
		})
	}
	slices.SortStableFunc(out, func(x, y pipeline.Record) int {
		if x.Partition != y.Partition {
			return int(x.Partition - y.Partition)
		}
		return int(x.Offset - y.Offset)
	})
	return out
}
