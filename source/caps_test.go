package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// heldMeter measures, at their most, the records (and their weight) the
// runtime holds of what the source delivered (in flight or waiting for
// admission), and those the source's core holds for paused partitions.
type heldMeter struct {
	mu                   sync.Mutex
	sizes                map[pipeline.TopicPartition][]int64 // delivered, not completed, in offset order
	records, bytes       int64
	maxRecords, maxBytes int64
	coreRecords          int
	coreBytes            int64
	settled              int64
	paused, polls        atomic.Int64
	sumRecords, sumBytes int64 // runtime + core, at polls
}

func newHeldMeter() *heldMeter { return &heldMeter{sizes: map[pipeline.TopicPartition][]int64{}} }

func (m *heldMeter) OnPartitionPaused(pipeline.TopicPartition) { m.paused.Add(1) }

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

func (m *heldMeter) delivered(tp pipeline.TopicPartition, recs []pipeline.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range recs {
		b := rebalance.Weight(&recs[i])
		m.sizes[tp] = append(m.sizes[tp], b)
		m.bytes += b
	}
	m.records += int64(len(recs))
	m.maxRecords, m.maxBytes = max(m.maxRecords, m.records), max(m.maxBytes, m.bytes)
}

func (m *heldMeter) OnPolled(time.Time) { m.polls.Add(1) }

func (m *heldMeter) polled(records int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.coreRecords, m.coreBytes = max(m.coreRecords, records), max(m.coreBytes, bytes)
	m.sumRecords, m.sumBytes = max(m.sumRecords, m.records+int64(records)), max(m.sumBytes, m.bytes+bytes)
}

func (m *heldMeter) done() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settled
}

// meteredSource runs a source with its Group wrapped so that m sees every
// delivery (counted before the runtime gets it: it may complete first).
type meteredSource struct {
	pipeline.Source
	m *heldMeter
}

func (s meteredSource) Run(ctx context.Context, g pipeline.Group) error {
	return s.Source.Run(ctx, meteredGroup{g, s.m})
}

type meteredGroup struct {
	pipeline.Group
	m *heldMeter
}

func (g meteredGroup) Deliver(tp pipeline.TopicPartition, recs []pipeline.Record) bool {
	g.m.delivered(tp, recs)
	return g.Group.Deliver(tp, recs)
}

// gatedRun runs src into a graph stuck until a partition paused and 50
// more polls passed, then lets it finish all n records.
func gatedRun(t *testing.T, src *Source, m *heldMeter, n int64, opts ...pipeline.Option) {
	t.Helper()
	src.polled = m.polled
	release := make(chan struct{})
	run := testkit.Start(t, meteredSource{src, m}, func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, _ pipeline.Record) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}, append(opts, pipeline.WithHooks(m))...)
	run.WaitUntil(t, "a partition paused", func() bool { return m.paused.Load() > 0 })
	after := m.polls.Load() + 50
	run.WaitUntil(t, "50 polls after the pause", func() bool { return m.polls.Load() >= after })
	close(release)
	run.WaitUntil(t, "every record done", func() bool { return m.done() == n })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
}

// With WithMaxInFlight(100) on librdkafka the runtime holds at most 100
// records in flight plus one delivery (MaxBatch records) per partition,
// and the core at most one record per partition: the one polled after the
// delivery that paused it was complete. librdkafka returns no record of a
// partition once it is paused (it drops what it prefetched for it).
func TestMaxInFlightIsACap(t *testing.T) {
	const (
		partitions = 4
		limit      = 100
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("caps", partitions))
	n := b.Fill(t, "caps", 5000, 100)
	m := newHeldMeter()
	gatedRun(t, newSource(t, b, "g-caps", "caps", nil), m, int64(n), pipeline.WithMaxInFlight(limit))
	t.Logf("runtime %d records, core %d records, both %d", m.maxRecords, m.coreRecords, m.sumRecords)
	if bound := int64(limit + partitions*rebalance.MaxBatch); m.maxRecords > bound {
		t.Errorf("the runtime held up to %d records; want at most %d (%d + %d partitions x %d)", m.maxRecords, bound, limit, partitions, rebalance.MaxBatch)
	}
	if m.coreRecords > partitions {
		t.Errorf("the core held up to %d records; want at most one per partition", m.coreRecords)
	}
}

// With WithMaxInFlightBytes(1 MiB) and zstd batches of 64 KiB values the
// runtime holds at most the budget plus one delivery (an eighth of the
// budget, or one record) per partition, and the core at most one record
// per partition.
func TestMaxInFlightBytesIsACap(t *testing.T) {
	const (
		partitions = 4
		perPart    = 200
		value      = 64 << 10
		budget     = 1 << 20
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("zcaps", partitions))
	n := produceZstd(t, b, "zcaps", partitions, perPart, value)
	m := newHeldMeter()
	gatedRun(t, newSource(t, b, "g-zcaps", "zcaps", nil), m, int64(n), pipeline.WithMaxInFlightBytes(budget))
	t.Logf("runtime %d bytes, core %d bytes, both %d", m.maxBytes, m.coreBytes, m.sumBytes)
	rec := int64(value + 9 + pipeline.RecordOverhead)
	if bound := budget + partitions*max(budget/8, rec); m.maxBytes > bound {
		t.Errorf("the runtime held up to %d bytes; want at most %d (the budget + %d partitions x one delivery)", m.maxBytes, bound, partitions)
	}
	if m.coreBytes > partitions*rec {
		t.Errorf("the core held up to %d bytes; want at most one record (%d) per partition", m.coreBytes, rec)
	}
}

// produceZstd writes perPart records of valueSize bytes that zstd
// compresses about 60 times (a random 1 KiB block repeated; keys of equal
// length) to every partition of topic.
func produceZstd(t *testing.T, b *kafkatest.Broker, topic string, partitions, perPart, valueSize int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 1024)
	var recs []*kgo.Record
	for i := range perPart {
		for p := range partitions {
			for j := range block {
				block[j] = byte(r.Uint32())
			}
			v := make([]byte, 0, valueSize)
			for len(v) < valueSize {
				v = append(v, block[:min(len(block), valueSize-len(v))]...)
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "%02d-%06d", p, i), Value: v})
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}
