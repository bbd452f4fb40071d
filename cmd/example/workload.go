package main

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// malformed are the kinds of bad input the demo workload mixes in.
var malformed = []string{
	`not json at all`,
	`[1, 2, 3]`,
	`{"amount": 12.5}`,
	`{"id": "", "amount": 1}`,
	`{"id": 42, "amount": 1}`,
	`{"id": "e-x", "amount": "12"}`,
	`{"id": "e-y"}`,
	`{"id": "e-z", "amount": 3, "user": 7}`,
}

// demoValue returns the i-th event of the demo workload: about 1% of them
// malformed.
func demoValue(i int) []byte {
	if i%100 == 37 {
		return []byte(malformed[(i/100)%len(malformed)])
	}
	if i%3 == 0 {
		return fmt.Appendf(nil, `{"id":"e-%d","amount":%d.%02d}`, i, i%500, i%100)
	}
	return fmt.Appendf(nil, `{"id":"e-%d","amount":%d.%02d,"user":"u-%d"}`, i, i%500, i%100, i%97)
}

// produceWorkload writes n demo events round-robin over partitions.
func produceWorkload(ctx context.Context, b *testkit.Broker, topic string, partitions int32, n int) error {
	const chunk = 10_000
	recs := make([]pipeline.Record, 0, chunk)
	for i := range n {
		recs = append(recs, pipeline.Record{Partition: int32(i) % partitions, Value: demoValue(i)})
		if len(recs) == chunk || i == n-1 {
			if err := b.ProduceContext(ctx, topic, recs...); err != nil {
				return fmt.Errorf("producing the demo workload: %w", err)
			}
			recs = recs[:0]
		}
	}
	return nil
}
