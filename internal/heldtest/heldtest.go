// Package heldtest measures what the runtime holds of the records a
// Kafka source delivered, for the tests of both sources' in-flight
// limits: a Meter wraps the source's Group and counts completions as a
// hook, GatedRun holds the graph until the source filled what it may,
// WantRecordsCap and WantBytesCap check the runtime's side of the limits,
// and ProduceZstd writes records that compress well.
package heldtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/internal/saturation"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Meter measures the records and bytes (rebalance.Weight) the runtime
// holds of what the source delivered, admitted in flight or waiting for
// admission: delivered and not yet completed. It is a pipeline hook
// (completions, pauses, polls) and wraps the source (Wrap) to see every
// delivery.
type Meter struct {
	mu                   sync.Mutex
	sizes                map[sluice.TopicPartition][]int64 // delivered, not completed, in offset order
	records, bytes       int64                             // held now
	maxRecords, maxBytes int64
	settled              int64

	paused, polls atomic.Int64
}

// NewMeter returns a Meter that has seen nothing.
func NewMeter() *Meter { return &Meter{sizes: map[sluice.TopicPartition][]int64{}} }

// OnPartitionPaused counts a pause.
func (m *Meter) OnPartitionPaused(sluice.TopicPartition) { m.paused.Add(1) }

// OnPolled counts a poll.
func (m *Meter) OnPolled(time.Time) { m.polls.Add(1) }

// OnRecordsCompleted drops the first n records held of tp.
func (m *Meter) OnRecordsCompleted(tp sluice.TopicPartition, n int, _ int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.sizes[tp][:n] {
		m.bytes -= b
	}
	m.sizes[tp] = m.sizes[tp][n:]
	m.records -= int64(n)
	m.settled += int64(n)
}

func (m *Meter) delivered(tp sluice.TopicPartition, recs []sluice.Record) {
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

// Held returns the records and bytes held now.
func (m *Meter) Held() (records, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records, m.bytes
}

// Peaks returns the most records and the most bytes held at once.
func (m *Meter) Peaks() (records, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxRecords, m.maxBytes
}

// Done returns how many records completed.
func (m *Meter) Done() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settled
}

// Wrap returns src with the Group it is given wrapped so that m sees
// every delivery, counted before the runtime gets it (it may complete
// before Deliver returns).
func (m *Meter) Wrap(src sluice.Source) sluice.Source { return source{src, m} }

type source struct {
	sluice.Source
	m *Meter
}

func (s source) Run(ctx context.Context, g sluice.Group) error {
	return s.Source.Run(ctx, group{g, s.m})
}

type group struct {
	sluice.Group
	m *Meter
}

// Saturated passes the runtime's answer on (false when it does not tell),
// so that a measured source behaves as it does unmeasured.
func (g group) Saturated() bool { return saturation.Of(g.Group) }

func (g group) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	g.m.delivered(tp, recs)
	return g.Group.Deliver(tp, recs)
}

// GatedRun runs src, wrapped by m, into a graph whose stage waits until a
// partition paused and 50 more polls passed (the source got what it
// could); then it releases the graph, waits until all n records completed
// and stops. opts go to the runtime, with m as a hook.
func GatedRun(t *testing.T, src sluice.Source, m *Meter, n int64, opts ...pipeline.Option) {
	t.Helper()
	release := make(chan struct{})
	run := testkit.Start(t, m.Wrap(src), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, _ sluice.Record) error {
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
	run.WaitUntil(t, "every record done", func() bool { return m.Done() == n })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
}

// ProduceZstd writes perPart records of valueSize bytes that zstd
// compresses about 60 times (a random 1 KiB block repeated; keys of equal
// length) to every partition of topic on the brokers at addrs, in zstd
// batches of at most batchBytes bytes of records (0: the client's
// default). It returns how many records it wrote.
func ProduceZstd(t *testing.T, addrs []string, topic string, partitions, perPart, valueSize, batchBytes int) int {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(time.Millisecond)}
	if batchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(batchBytes)))
	}
	cl, err := kgo.NewClient(opts...)
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

// compressible returns a value of size bytes: a random 1 KiB block
// repeated.
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
