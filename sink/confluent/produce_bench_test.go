package confluent_test

import (
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkProduce produces 4 partitions × 5000 values of 100 bytes
// through the librdkafka producer to the embedded broker (fed by
// testkit's fake source) per op, until all commit: the produce path's
// cost per message (allocs/op divided by 20000). Run: go test -run ^$
// -bench Produce -benchmem -benchtime 3x ./sink/.
func BenchmarkProduce(b *testing.B) {
	const parts, n = 4, 5000
	value := make([]byte, 100)
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = value
	}
	br := kafkatest.NewBroker(b, kafkatest.WithTopic("out", parts))
	p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: br.Addrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	for b.Loop() {
		h := testkit.New(b, func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(s, p, "out", func(r sluice.Record) (sluice.Message, error) {
				return sluice.Message{Value: r.Value}, nil
			})
		})
		for part := range int32(parts) {
			h.Assign("in", part)
			h.Send("in", part, vs...)
		}
		for part := range int32(parts) {
			h.WaitCommitted("in", part, n)
		}
		if err := h.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*parts*n)/b.Elapsed().Seconds(), "msgs/s")
}
