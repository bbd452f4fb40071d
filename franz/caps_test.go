package franz

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/heldtest"
	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// srcPeaks keeps the most the source held after each poll, by kind.
type srcPeaks struct {
	mu  sync.Mutex
	max held
}

func (p *srcPeaks) polled(h held) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.max.core, p.max.coreBytes = max(p.max.core, h.core), max(p.max.coreBytes, h.coreBytes)
	p.max.kgo, p.max.kgoBytes = max(p.max.kgo, h.kgo), max(p.max.kgoBytes, h.kgoBytes)
}

func (p *srcPeaks) get() held {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}

// meteredSource returns a test source of topic in group whose deliveries
// a new Meter sees, and the peaks of what the source held.
func meteredSource(t *testing.T, b *kafkatest.Broker, group, topic string) (*Source, *heldtest.Meter, *srcPeaks) {
	t.Helper()
	src := newTestSource(t, b, group, topic)
	peaks := &srcPeaks{}
	src.polled = peaks.polled
	return src, heldtest.NewMeter(), peaks
}

// With WithMaxInFlight(100) the runtime holds at most 100 records in
// flight plus, waiting for admission, one delivery (rebalance.MaxBatch
// records) per partition, the one that paused it: the records kgo
// returned for a paused partition stay with the source, which holds at
// most an eighth of the limit (at least MaxBatch) and takes no more from
// kgo meanwhile.
func TestMaxInFlightIsACapOnFranz(t *testing.T) {
	const partitions, perPart, limit = 4, 5000, 100
	b, n := filledTopic(t, "caps", partitions, perPart)
	src, m, peaks := meteredSource(t, b, "g-caps", "caps")
	heldtest.GatedRun(t, src, m, int64(n), pipeline.WithMaxInFlight(limit))
	heldtest.WantRecordsCap(t, m, limit, partitions)
	held := peaks.get()
	t.Logf("source %+v", held)
	if held.core > rebalance.MaxBatch {
		t.Errorf("the source held up to %d records; want at most %d", held.core, rebalance.MaxBatch)
	}
}

// zstdBatch is the most bytes of records in one zstd batch the tests
// write.
const zstdBatch = 256 << 10

// With WithMaxInFlightBytes(1 MiB) and zstd batches of 64 KiB values
// (about 60 times fewer bytes on the wire than decompressed), the runtime
// holds at most the budget plus one delivery (an eighth of the budget, or
// one record) per partition; the source at most an eighth of the budget
// plus a record; kgo, whose fetches the source sizes by what the batches
// decompress to, one fetch (a broker) of about a 32nd of the budget, or
// one batch when that is larger.
func TestMaxInFlightBytesIsACapOnFranz(t *testing.T) {
	const partitions, perPart, value, budget = 4, 200, 64 << 10, 1 << 20
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("zcaps", partitions))
	n := heldtest.ProduceZstd(t, b.Addrs(), "zcaps", partitions, perPart, value, zstdBatch)
	src, m, peaks := meteredSource(t, b, "g-zcaps", "zcaps")
	heldtest.GatedRun(t, src, m, int64(n), pipeline.WithMaxInFlightBytes(budget))
	rec := heldtest.WantBytesCap(t, m, budget, partitions, value)
	held := peaks.get()
	t.Logf("source %+v", held)
	if bound := budget/8 + rec; held.coreBytes > bound {
		t.Errorf("the source held up to %d bytes; want at most %d (an eighth of the budget + a record)", held.coreBytes, bound)
	}
	// kgo's bytes are keys and values; a batch holds at most zstdBatch
	// bytes of records.
	if bound := max(budget/32, zstdBatch); held.kgoBytes > int64(bound) {
		t.Errorf("kgo buffered up to %d bytes decompressed; want at most %d (one fetch: a 32nd of the budget, or a batch)", held.kgoBytes, bound)
	}
}

// A partition paused after each delivery (the partition queue is smaller
// than one) gets the rest of what kgo returned for it from the source,
// held until the runtime lists it resumable: every record exactly once,
// in offset order, and the runtime never holds more of a partition than
// its queue plus one delivery.
func TestHeldRecordsDeliveredInOrderOnFranz(t *testing.T) {
	const partitions, perPart, queue = 4, 3000, 50
	b, n := filledTopic(t, "held", partitions, perPart)
	src, m, peaks := meteredSource(t, b, "g-held", "held")
	var mu sync.Mutex
	got := map[int32][]int64{}
	run := testkit.Start(t, m.Wrap(src), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			mu.Lock()
			defer mu.Unlock()
			got[r.Partition] = append(got[r.Partition], r.Offset)
			return nil
		})
	}, pipeline.WithPartitionQueue(queue), pipeline.WithHooks(m))
	run.WaitUntil(t, "every record done", func() bool { return m.Done() == int64(n) })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkEveryOffsetInOrder(t, got, partitions, perPart)
	if records, _ := m.Peaks(); records > partitions*(queue+rebalance.MaxBatch) {
		t.Errorf("the runtime held up to %d records; want at most %d partitions x (%d + %d)", records, partitions, queue, rebalance.MaxBatch)
	}
	held := peaks.get()
	if held.core == 0 {
		t.Error("the source never held a record: the test did not pause a partition mid-poll")
	}
	t.Logf("source held up to %d records", held.core)
}

// checkEveryOffsetInOrder fails t unless got holds, for each of the
// partitions, the offsets 0..perPart-1 in order, each once.
func checkEveryOffsetInOrder(t *testing.T, got map[int32][]int64, partitions int, perPart int) {
	t.Helper()
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
}
