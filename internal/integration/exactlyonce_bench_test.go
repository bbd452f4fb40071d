package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkExactlyOnce measures what exactly-once costs on the embedded
// broker: one consumer reads 8 partitions of 16-byte records and produces
// one output per record (a Map then sink.Produce), through a plain
// producer (at-least-once) or a transactional one bound to the source,
// at the default commit interval and at 100ms. It reports msg/s per
// op (one op consumes the whole input).
//
//	go test -run '^$' -bench ExactlyOnce -benchtime 3x ./internal/integration/
func BenchmarkExactlyOnce(b *testing.B) {
	const parts, perPartition = 8, 20_000
	for _, interval := range []time.Duration{0, 100 * time.Millisecond} {
		for _, eos := range []bool{false, true} {
			mode := "at-least-once"
			if eos {
				mode = "exactly-once"
			}
			name := fmt.Sprintf("%s/interval=%v", mode, interval)
			if interval == 0 {
				name = mode + "/interval=default"
			}
			b.Run(name, func(b *testing.B) {
				br := kafkatest.NewBroker(b)
				b.StopTimer()
				for i := range b.N {
					in, out, group := fmt.Sprintf("in-%d", i), fmt.Sprintf("out-%d", i), fmt.Sprintf("g-%d", i)
					br.CreateTopic(b, in, parts)
					br.CreateTopic(b, out, parts)
					total := br.Fill(b, in, perPartition, 16)
					hw := br.HighWatermarks(b, in)
					b.StartTimer()
					start := time.Now()
					eosRun(b, br, in, out, group, interval, eos, hw)
					b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msg/s")
					b.StopTimer()
				}
			})
		}
	}
}

func eosRun(b *testing.B, br *kafkatest.Broker, in, out, group string, interval time.Duration, eos bool, hw map[int32]int64) {
	src, err := source.NewKafka(source.Config{Brokers: br.Addrs(), Group: group, Topics: []string{in}, CommitInterval: interval})
	if err != nil {
		b.Fatal(err)
	}
	pcfg := sink.ProducerConfig{Brokers: br.Addrs()}
	var p *sink.Producer
	if eos {
		p, err = sink.NewTransactionalProducer(src, sink.TransactionalConfig{ProducerConfig: pcfg, TransactionalID: "bench-" + group})
	} else {
		p, err = sink.NewProducer(pcfg)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		msgs := stages.Map(s, func(_ context.Context, r pipeline.Record) (sink.Message, error) {
			return sink.Message{Key: r.Key, Value: r.Value}, nil
		})
		return sink.Produce(msgs, p, out, func(m sink.Message) (sink.Message, error) { return m, nil })
	}
	c := startConsumer(b, "bench", src, build)
	for !maps.Equal(br.Committed(b, group, in), hw) {
		select {
		case <-c.Done():
			b.Fatalf("consumer stopped: %v", c.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	c.stop(b)
}
