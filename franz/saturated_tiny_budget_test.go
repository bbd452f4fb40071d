package franz

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestTinyBudgetConsumesEverything: a budget every record fills on its
// own, so the source is saturated after each admission: one record in
// flight (WithMaxInFlight(1)), or a byte limit below a single record
// (WithMaxInFlightBytes(512), 2000-byte values: each record goes alone
// when nothing else is in flight). Every partition is consumed to the
// end, each record once and in order, and the commits are exact.
func TestTinyBudgetConsumesEverything(t *testing.T) {
	for _, c := range []struct {
		name  string
		value int
		opt   pipeline.Option
	}{
		{"records", 100, pipeline.WithMaxInFlight(1)},
		{"bytes", 2000, pipeline.WithMaxInFlightBytes(512)},
	} {
		t.Run(c.name, func(t *testing.T) { tinyBudget(t, c.value, c.opt) })
	}
}

func tinyBudget(t *testing.T, valueSize int, limit pipeline.Option) {
	const (
		topic, group = "tiny", "g-tiny"
		partitions   = 3
		perPart      = 200
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	producePartitionByPartition(t, b, topic, partitions, perPart, valueSize)
	seen := &offsetsSeen{}
	run := testkit.Start(t, newTestSource(t, b, group, topic), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			seen.add(r)
			return nil
		})
	}, limit)
	b.WaitCommitted(t, group, topic, map[int32]int64{0: perPart, 1: perPart, 2: perPart})
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkEveryOffsetInOrder(t, seen.byPartition(), partitions, perPart)
}
