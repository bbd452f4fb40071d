package franz

import (
	"fmt"
	"testing"

	"github.com/sluice-go/sluice/internal/heldtest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestHeldBytesWithinShareFromTheFirstPoll: with WithMaxInFlightBytes(1
// MiB) the source holds about an eighth of the budget (docs/lifecycle.md,
// "Backpressure": at most an eighth of the budget plus a record), from
// the first poll on. The records are 1000-byte values produced one
// partition at a time, so that a fetch brings large batches of a
// partition, the graph holds every record and a small partition queue
// pauses a partition at its first delivery: the poll that pauses it is
// the source's first, before any record was weighed, and it must not take
// as many records as the record share allows (N/8: 12,500 at the
// default) whatever they weigh.
func TestHeldBytesWithinShareFromTheFirstPoll(t *testing.T) {
	const (
		partitions = 4
		perPart    = 2000
		valueSize  = 1000
		budget     = 1 << 20
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("firstpoll", partitions))
	producePartitionByPartition(t, b, "firstpoll", partitions, perPart, valueSize)
	src, m, peaks := meteredSource(t, b, "g-firstpoll", "firstpoll")
	heldtest.GatedRun(t, src, m, partitions*perPart, pipeline.WithMaxInFlightBytes(budget), pipeline.WithPartitionQueue(16))
	held := peaks.get()
	t.Logf("source %+v", held)
	rec := int64(len(fmt.Sprintf("%d-%d", 0, perPart))+valueSize) + pipeline.RecordOverhead
	if bound := budget/8 + rec; held.coreBytes > bound {
		t.Errorf("the source held up to %d bytes (%d records); want at most %d (an eighth of the budget + a record)", held.coreBytes, held.core, bound)
	}
}
