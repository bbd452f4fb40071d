package confluent_test

import (
	"testing"

	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkProduce produces 4 partitions × 5000 values of 100 bytes
// through the librdkafka producer to the embedded broker per op, until
// all commit (producertest.BenchProduce): allocs/op divided by 20000 is
// the produce path's cost per message. Run: go test -run ^$ -bench
// Produce -benchmem -benchtime 10x ./sink/confluent/.
func BenchmarkProduce(b *testing.B) {
	br := kafkatest.NewBroker(b, kafkatest.WithTopic("out", producertest.BenchPartitions))
	p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: br.Addrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	producertest.BenchProduce(b, p)
}
