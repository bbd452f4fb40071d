package source

import (
	"sync"
	"testing"

	"github.com/sluice-go/sluice/internal/heldtest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// coreMeter is a heldtest.Meter that also keeps, at their most, the
// records and bytes the source's core holds for paused partitions after
// a poll, and those together with what the runtime held then.
type coreMeter struct {
	*heldtest.Meter
	mu                   sync.Mutex
	coreRecords          int
	coreBytes            int64
	sumRecords, sumBytes int64
}

func (m *coreMeter) polled(records int, bytes int64) {
	held, heldBytes := m.Held()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.coreRecords, m.coreBytes = max(m.coreRecords, records), max(m.coreBytes, bytes)
	m.sumRecords, m.sumBytes = max(m.sumRecords, held+int64(records)), max(m.sumBytes, heldBytes+bytes)
}

// gatedRun runs src as heldtest.GatedRun does, measured by a coreMeter it
// returns.
func gatedRun(t *testing.T, src *Source, n int64, opts ...pipeline.Option) *coreMeter {
	t.Helper()
	m := &coreMeter{Meter: heldtest.NewMeter()}
	src.polled = m.polled
	heldtest.GatedRun(t, src, m.Meter, n, opts...)
	return m
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
	m := gatedRun(t, newSource(t, b, "g-caps", "caps", nil), int64(n), pipeline.WithMaxInFlight(limit))
	heldtest.WantRecordsCap(t, m.Meter, limit, partitions)
	t.Logf("core %d records, with the runtime's %d", m.coreRecords, m.sumRecords)
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
	n := heldtest.ProduceZstd(t, b.Addrs(), "zcaps", partitions, perPart, value, 0)
	m := gatedRun(t, newSource(t, b, "g-zcaps", "zcaps", nil), int64(n), pipeline.WithMaxInFlightBytes(budget))
	rec := heldtest.WantBytesCap(t, m.Meter, budget, partitions, value)
	t.Logf("core %d bytes, with the runtime's %d", m.coreBytes, m.sumBytes)
	if m.coreBytes > partitions*rec {
		t.Errorf("the core held up to %d bytes; want at most one record (%d) per partition", m.coreBytes, rec)
	}
}
