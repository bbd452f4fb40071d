package producertest

import (
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
)

// Produce benchmark sizes: per op, BenchPartitions partitions of
// BenchValues values of 100 bytes.
const (
	BenchPartitions = 4
	BenchValues     = 5000
)

// BenchProduce is the body of a backend's produce benchmark: per op, it
// runs a graph that produces every value with sink.Produce and p to topic
// "out" (which must have BenchPartitions partitions), feeding
// BenchPartitions partitions of BenchValues values of 100 bytes from
// testkit's fake source, until all committed; then it reports msgs/s.
// allocs/op divided by BenchPartitions*BenchValues is the produce path's
// allocations per message (plus the harness's).
func BenchProduce(b *testing.B, p sink.Producer) {
	value := make([]byte, 100)
	vs := make([][]byte, BenchValues)
	for i := range vs {
		vs[i] = value
	}
	for b.Loop() {
		h := testkit.New(b, func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(s, p, "out", func(r sluice.Record) (sluice.Message, error) {
				return sluice.Message{Value: r.Value}, nil
			})
		})
		for part := range int32(BenchPartitions) {
			h.Assign("in", part)
			h.Send("in", part, vs...)
		}
		for part := range int32(BenchPartitions) {
			h.WaitCommitted("in", part, BenchValues)
		}
		if err := h.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*BenchPartitions*BenchValues)/b.Elapsed().Seconds(), "msgs/s")
}
