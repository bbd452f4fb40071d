package franz

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRounds produces record(p, j) for every partition p below
// partitions and every j below perPart, in rounds of perBatch records a
// partition, flushing cl after each round: with a producer that lingers
// longer than a round takes, each partition's part of a round is one
// batch. It fails t on the first failed record.
func produceRounds(t *testing.T, cl *kgo.Client, partitions int32, perPart, perBatch int, record func(p int32, j int) *kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var failed atomic.Pointer[error]
	for i := 0; i < perPart; i += perBatch {
		for p := range partitions {
			for j := i; j < min(i+perBatch, perPart); j++ {
				cl.Produce(ctx, record(p, j), func(_ *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
}
