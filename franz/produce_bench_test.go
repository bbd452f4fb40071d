package franz_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkProduceLinger produces 4 partitions × 5000 values of 100 bytes
// through sink.Produce and the franz producer to the embedded broker (fed
// by testkit's fake source) per op, until all commit
// (producertest.BenchProduce), for kgo.ProducerLinger 0,
// DefaultProducerLinger and 10ms (kgo's default). Run: go test -run ^$
// -bench ProduceLinger -benchmem -benchtime 3x ./franz/.
func BenchmarkProduceLinger(b *testing.B) {
	for _, linger := range []time.Duration{0, franz.DefaultProducerLinger, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("linger=%v", linger), func(b *testing.B) {
			br := kafkatest.NewBroker(b, kafkatest.WithTopic("out", producertest.BenchPartitions))
			p, err := franz.NewProducer(franz.ProducerConfig{Brokers: br.Addrs(), Opts: []kgo.Opt{kgo.ProducerLinger(linger)}})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = p.Close() }()
			producertest.BenchProduce(b, p)
		})
	}
}
