package franz

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// weight is what a record counts in the byte budget.
func weight(r *pipeline.Record) int64 {
	return int64(len(r.Key)+len(r.Value)) + pipeline.RecordOverhead
}

// heldMeter measures what the runtime holds of what the source delivered
// (admitted in flight, or waiting for admission): the records and bytes
// delivered and not yet committable, at their most. It wraps the Group the
// source is given (heldSource) and counts completions as a hook.
type heldMeter struct {
	mu                 sync.Mutex
	sizes              map[pipeline.TopicPartition][]int64 // delivered, not completed, in offset order
	records, bytes     int64                               // held now
	maxRecords         int64
	maxBytes           int64
	delivered, settled int64 // records delivered, completed
	src                held  // the most the source held after a poll
}

func newHeldMeter() *heldMeter {
	return &heldMeter{sizes: map[pipeline.TopicPartition][]int64{}}
}

func (m *heldMeter) OnRecordsCompleted(tp pipeline.TopicPartition, n int, _ int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.sizes[tp][:n] {
		m.bytes -= b
	}
	m.sizes[tp] = m.sizes[tp][n:]
	m.records -= int64(n)
	m.settled += int64(n)
}

func (m *heldMeter) delivered1(tp pipeline.TopicPartition, recs []pipeline.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range recs {
		b := weight(&recs[i])
		m.sizes[tp] = append(m.sizes[tp], b)
		m.bytes += b
	}
	m.records += int64(len(recs))
	m.delivered += int64(len(recs))
	m.maxRecords, m.maxBytes = max(m.maxRecords, m.records), max(m.maxBytes, m.bytes)
}

func (m *heldMeter) done() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settled
}

// polled records what the source holds after a poll.
func (m *heldMeter) polled(h held) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.src.core, m.src.coreBytes = max(m.src.core, h.core), max(m.src.coreBytes, h.coreBytes)
	m.src.kgo, m.src.kgoBytes = max(m.src.kgo, h.kgo), max(m.src.kgoBytes, h.kgoBytes)
}

func (m *heldMeter) peaks() (records, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxRecords, m.maxBytes
}

// heldSource runs a source with its Group wrapped so that m sees every
// delivery.
type heldSource struct {
	pipeline.Source
	m *heldMeter
}

func (s heldSource) Run(ctx context.Context, g pipeline.Group) error {
	return s.Source.Run(ctx, heldGroup{g, s.m})
}

type heldGroup struct {
	pipeline.Group
	m *heldMeter
}

// Deliver counts recs before the runtime gets them (they may complete
// before Deliver returns).
func (g heldGroup) Deliver(tp pipeline.TopicPartition, recs []pipeline.Record) bool {
	g.m.delivered1(tp, recs)
	return g.Group.Deliver(tp, recs)
}

// gatedRun runs src into a graph whose stage waits until release is
// closed, until a partition paused and 50 more polls passed (the source
// got what it could); then it releases the graph and waits until all n
// records completed.
func gatedRun(t *testing.T, src pipeline.Source, m *heldMeter, n int64, opts ...pipeline.Option) {
	t.Helper()
	pc := &pauseCounter{paused: map[pipeline.TopicPartition]bool{}}
	release := make(chan struct{})
	run := testkit.Start(t, heldSource{src, m}, func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, _ pipeline.Record) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}, append(opts, pipeline.WithHooks(pc, m))...)
	run.WaitUntil(t, "a partition paused", func() bool { return pc.count() > 0 })
	after := pc.polls.Load() + 50
	run.WaitUntil(t, "50 polls after the pauses", func() bool { return pc.polls.Load() >= after })
	close(release)
	run.WaitUntil(t, "every record done", func() bool { return m.done() == n })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
}

// With WithMaxInFlight(100) the runtime holds at most 100 records in
// flight plus, waiting for admission, one delivery (rebalance.MaxBatch
// records) per partition, the one that paused it: the records kgo
// returned for a paused partition stay with the source, which holds at
// most an eighth of the limit (at least MaxBatch) and takes no more from
// kgo meanwhile.
func TestMaxInFlightIsACapOnFranz(t *testing.T) {
	const (
		partitions = 4
		perPart    = 5000
		limit      = 100
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("caps", partitions))
	n := b.Fill(t, "caps", perPart, 100)
	m := newHeldMeter()
	src := newTestSource(t, b, "g-caps", "caps")
	src.polled = m.polled
	gatedRun(t, src, m, int64(n), pipeline.WithMaxInFlight(limit))
	records, _ := m.peaks()
	t.Logf("runtime %d records, source %+v", records, m.src)
	if bound := int64(limit + partitions*rebalance.MaxBatch); records > bound {
		t.Errorf("the runtime held up to %d records; want at most %d (%d in flight + %d partitions x %d)", records, bound, limit, partitions, rebalance.MaxBatch)
	}
	if m.src.core > rebalance.MaxBatch {
		t.Errorf("the source held up to %d records; want at most %d", m.src.core, rebalance.MaxBatch)
	}
}

// compressible returns a value of size bytes that zstd compresses about
// 60 times: a random 1 KiB block repeated.
func compressible(r *rand.Rand, size int) []byte {
	block := make([]byte, 1024)
	for i := range block {
		block[i] = byte(r.Uint32())
	}
	v := make([]byte, 0, size)
	for len(v) < size {
		v = append(v, block[:min(len(block), size-len(v))]...)
	}
	return v
}

// zstdBatch is the most bytes of records in one of produceZstd's batches.
const zstdBatch = 256 << 10

// produceZstd writes perPart records of valueSize compressible bytes (keys
// of equal length) to every partition of topic, in zstd batches of at
// most zstdBatch bytes.
func produceZstd(t *testing.T, b *kafkatest.Broker, topic string, partitions, perPart, valueSize int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchMaxBytes(zstdBatch))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for i := range perPart {
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "%02d-%06d", p, i), Value: compressible(r, valueSize)})
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// With WithMaxInFlightBytes(1 MiB) and zstd batches of 64 KiB values
// (about 60 times fewer bytes on the wire than decompressed), the runtime
// holds at most the budget plus one delivery (an eighth of the budget, or
// one record) per partition; the source at most an eighth of the budget
// plus a record; kgo, whose fetches the source sizes by what the batches
// decompress to, one fetch (a broker) of about a 32nd of the budget, or
// one batch when that is larger.
func TestMaxInFlightBytesIsACapOnFranz(t *testing.T) {
	const (
		partitions = 4
		perPart    = 200
		value      = 64 << 10
		budget     = 1 << 20
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("zcaps", partitions))
	n := produceZstd(t, b, "zcaps", partitions, perPart, value)
	m := newHeldMeter()
	src := newTestSource(t, b, "g-zcaps", "zcaps")
	src.polled = m.polled
	gatedRun(t, src, m, int64(n), pipeline.WithMaxInFlightBytes(budget))
	_, bytes := m.peaks()
	t.Logf("runtime %d bytes, source %+v", bytes, m.src)
	rec := int64(value + 9 + pipeline.RecordOverhead)
	if bound := budget + partitions*max(budget/8, rec); bytes > bound {
		t.Errorf("the runtime held up to %d bytes (%.1f MiB); want at most %d (the budget + %d partitions x one delivery)", bytes, float64(bytes)/(1<<20), bound, partitions)
	}
	if bound := budget/8 + rec; m.src.coreBytes > bound {
		t.Errorf("the source held up to %d bytes; want at most %d (an eighth of the budget + a record)", m.src.coreBytes, bound)
	}
	// kgo's bytes are keys and values; a batch holds at most zstdBatch
	// bytes of records.
	if bound := max(budget/32, zstdBatch); m.src.kgoBytes > int64(bound) {
		t.Errorf("kgo buffered up to %d bytes decompressed; want at most %d (one fetch: a 32nd of the budget, or a batch)", m.src.kgoBytes, bound)
	}
}

// A partition paused after each delivery (the partition queue is smaller
// than one) gets the rest of what kgo returned for it from the source,
// held until the runtime lists it resumable: every record exactly once,
// in offset order, and the runtime never holds more of a partition than
// its queue plus one delivery.
func TestHeldRecordsDeliveredInOrderOnFranz(t *testing.T) {
	const (
		partitions = 4
		perPart    = 3000
		queue      = 50
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("held", partitions))
	n := b.Fill(t, "held", perPart, 100)
	m := newHeldMeter()
	src := newTestSource(t, b, "g-held", "held")
	src.polled = m.polled
	var mu sync.Mutex
	got := map[int32][]int64{}
	run := testkit.Start(t, heldSource{src, m}, func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r pipeline.Record) error {
			mu.Lock()
			defer mu.Unlock()
			got[r.Partition] = append(got[r.Partition], r.Offset)
			return nil
		})
	}, pipeline.WithPartitionQueue(queue), pipeline.WithHooks(m))
	run.WaitUntil(t, "every record done", func() bool { return m.done() == int64(n) })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		offs := got[p]
		ok := len(offs) == perPart
		for i := 0; ok && i < len(offs); i++ {
			ok = offs[i] == int64(i)
		}
		if !ok {
			t.Errorf("partition %d: processed %d records, not 0..%d in order", p, len(offs), perPart-1)
		}
	}
	if records, _ := m.peaks(); records > partitions*(queue+rebalance.MaxBatch) {
		t.Errorf("the runtime held up to %d records; want at most %d partitions x (%d + %d)", records, partitions, queue, rebalance.MaxBatch)
	}
	if m.src.core == 0 {
		t.Error("the source never held a record: the test did not pause a partition mid-poll")
	}
	t.Logf("source held up to %d records", m.src.core)
}
