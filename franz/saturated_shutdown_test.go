package franz

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestSaturatedShutdownCommitsExactly: Run is stopped while its graphs
// hold every record they got (WithMaxInFlight(8): the budget is full, the
// poll loop takes nothing), and they are released as the shutdown
// drains. Run returns nil, and the group's committed offset of each
// partition is exactly what was processed of it, from its start.
func TestSaturatedShutdownCommitsExactly(t *testing.T) {
	const (
		topic, group = "satstop", "g-satstop"
		partitions   = 4
		perPart      = 100
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	producePartitionByPartition(t, b, topic, partitions, perPart, 100)
	seen := &offsetsSeen{}
	g := newGate()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, newTestSource(t, b, group, topic), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				if err := g.pass(ctx); err != nil {
					return err
				}
				seen.add(r)
				return nil
			})
		}, pipeline.WithMaxInFlight(8))
	}()
	select {
	case <-g.entered:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	case <-time.After(time.Minute):
		t.Fatal("nothing processed in a minute")
	}
	cancel()
	close(g.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context's end")
	}
	want := map[int32]int64{}
	for p, offs := range seen.byPartition() {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d processed offsets %v, want 0, 1, ... in order", p, offs)
			}
		}
		want[p] = int64(len(offs))
	}
	if committed := b.Committed(t, group, topic); !maps.Equal(committed, want) {
		t.Fatalf("committed %v, want what was processed: %v", committed, want)
	}
}
