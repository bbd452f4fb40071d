package heldtest

import (
	"testing"

	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/pipeline"
)

// WantRecordsCap fails t unless the runtime held, at its most (m.Peaks),
// no more than limit records (pipeline.WithMaxInFlight) plus, waiting
// for admission, one delivery (rebalance.MaxBatch records) per
// partition: the one that paused it.
func WantRecordsCap(t *testing.T, m *Meter, limit, partitions int64) {
	t.Helper()
	records, _ := m.Peaks()
	t.Logf("the runtime held up to %d records", records)
	if bound := limit + partitions*rebalance.MaxBatch; records > bound {
		t.Errorf("the runtime held up to %d records; want at most %d (%d in flight + %d partitions x %d)",
			records, bound, limit, partitions, rebalance.MaxBatch)
	}
}

// WantBytesCap fails t unless the runtime held, at its most (m.Peaks),
// no more than budget bytes (pipeline.WithMaxInFlightBytes) plus one
// delivery per partition: an eighth of the budget, or one record of a
// value of valueSize bytes (and a 9-byte key) when that is larger. It
// returns the bytes such a record weighs.
func WantBytesCap(t *testing.T, m *Meter, budget, partitions, valueSize int64) (record int64) {
	t.Helper()
	_, bytes := m.Peaks()
	t.Logf("the runtime held up to %d bytes", bytes)
	record = valueSize + 9 + pipeline.RecordOverhead
	if bound := budget + partitions*max(budget/8, record); bytes > bound {
		t.Errorf("the runtime held up to %d bytes (%.1f MiB); want at most %d (the budget + %d partitions x one delivery)",
			bytes, float64(bytes)/(1<<20), bound, partitions)
	}
	return record
}
