package main

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// produceWorkload writes n demo events (demo.Value) round-robin over
// partitions.
func produceWorkload(ctx context.Context, b *kafkatest.Broker, topic string, partitions int32, n int) error {
	const chunk = 10_000
	recs := make([]sluice.Record, 0, chunk)
	for i := range n {
		recs = append(recs, sluice.Record{Partition: int32(i) % partitions, Value: demo.Value(i)})
		if len(recs) == chunk || i == n-1 {
			if err := b.ProduceContext(ctx, topic, recs...); err != nil {
				return fmt.Errorf("producing the demo workload: %w", err)
			}
			recs = recs[:0]
		}
	}
	return nil
}
