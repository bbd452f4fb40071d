package franz_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkProduceLinger produces 4 partitions × 5000 values of 100 bytes
// through franz.Produce to the embedded broker (fed by testkit's fake
// source) per op, until all commit, for kgo.ProducerLinger 0, 5ms (the
// default) and 10ms (kgo's). Run: go test -run ^$ -bench ProduceLinger
// -benchtime 3x ./franz/.
func BenchmarkProduceLinger(b *testing.B) {
	const parts, n = 4, 5000
	value := make([]byte, 100)
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = value
	}
	for _, linger := range []time.Duration{0, franz.DefaultProducerLinger, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("linger=%v", linger), func(b *testing.B) {
			br := kafkatest.NewBroker(b, kafkatest.WithTopic("out", parts))
			p, err := franz.NewProducer(franz.ProducerConfig{Brokers: br.Addrs(), Opts: []kgo.Opt{kgo.ProducerLinger(linger)}})
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
		})
	}
}
