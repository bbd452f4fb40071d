package integration

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkExactlyOnce measures what exactly-once costs on the embedded
// broker: one consumer reads 8 partitions of 16-byte records and produces
// one output per record (a Map then a Produce stage), through a plain
// producer (at-least-once) or a transactional one bound to the source,
// at the default commit interval and at 100ms, on each backend
// (librdkafka: source.NewSource with sink's producers; franz:
// franz.NewSource with franz's). The backend is the innermost
// sub-benchmark, so the two alternate configuration by configuration
// (-count repeats each sub-benchmark in a row: for more rounds, repeat
// the command). One op starts the consumer, consumes the whole
// input and ends when the group committed the high watermarks (the
// output then holds one record per input, a transaction's control
// records aside: checked after each op). It reports msg/s over all ops
// (records over the timed time, consumer start and group join included)
// and msg/s-from-first (from the first record the Map saw to the op's
// end: without the start).
//
//	go test -run '^$' -bench ExactlyOnce -benchtime 3x ./internal/integration/
func BenchmarkExactlyOnce(b *testing.B) {
	const parts, perPartition = 8, 20_000
	for _, interval := range []time.Duration{0, 100 * time.Millisecond} {
		for _, eos := range []bool{false, true} {
			for _, backend := range []string{"librdkafka", "franz"} {
				mode := "at-least-once"
				if eos {
					mode = "exactly-once"
				}
				ival := "default"
				if interval != 0 {
					ival = interval.String()
				}
				b.Run(fmt.Sprintf("%s/interval=%s/%s", mode, ival, backend), func(b *testing.B) {
					br := kafkatest.NewBroker(b)
					b.StopTimer()
					var total int
					var fromFirst time.Duration
					for i := range b.N {
						in, out, group := fmt.Sprintf("in-%d", i), fmt.Sprintf("out-%d", i), fmt.Sprintf("g-%d", i)
						br.CreateTopic(b, in, parts)
						br.CreateTopic(b, out, parts)
						total = br.Fill(b, in, perPartition, 16)
						hw := br.HighWatermarks(b, in)
						b.StartTimer()
						first := eosRun(b, br, backend, in, out, group, interval, eos, hw)
						fromFirst += time.Since(first)
						b.StopTimer()
						if n := sum(br.HighWatermarks(b, out)); n < int64(total) {
							b.Fatalf("%s has %d offsets, want at least one per input (%d)", out, n, total)
						}
					}
					b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "msg/s")
					b.ReportMetric(float64(total*b.N)/fromFirst.Seconds(), "msg/s-from-first")
				})
			}
		}
	}
}

// eosRun consumes in to its high watermarks hw through backend's source
// and producer and returns, once the group committed them and the
// consumer stopped, when the first record reached the Map.
func eosRun(b *testing.B, br *kafkatest.Broker, backend, in, out, group string, interval time.Duration, eos bool, hw map[int32]int64) time.Time {
	var (
		src     sluice.Source
		produce func(pipeline.Stream[sluice.Message]) pipeline.End
		closeP  func() error
	)
	switch backend {
	case "librdkafka":
		s, p := eosLibrdkafka(b, br, group, in, interval, eos)
		src, closeP = s, p.Close
		produce = func(msgs pipeline.Stream[sluice.Message]) pipeline.End {
			return sink.Produce(msgs, p, out, identity)
		}
	case "franz":
		s, p := eosFranz(b, br, group, in, interval, eos)
		src, closeP = s, p.Close
		produce = func(msgs pipeline.Stream[sluice.Message]) pipeline.End {
			return sink.Produce(msgs, p, out, identity)
		}
	default:
		b.Fatalf("unknown backend %q", backend)
	}
	defer func() { _ = closeP() }()
	var first atomic.Pointer[time.Time]
	build := func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return produce(stages.Map(s, func(_ context.Context, r sluice.Record) (sluice.Message, error) {
			if first.Load() == nil {
				now := time.Now()
				first.CompareAndSwap(nil, &now)
			}
			return sluice.Message{Key: r.Key, Value: r.Value}, nil
		}))
	}
	c := startConsumer(b, "bench", src, build)
	for !maps.Equal(br.Committed(b, group, in), hw) {
		select {
		case <-c.Done():
			b.Fatalf("consumer stopped: %v", c.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	end := time.Now()
	c.stop(b)
	if t := first.Load(); t != nil {
		return *t
	}
	return end // an empty input: no record reached the Map
}

// sum adds the high watermarks of a topic's partitions.
func sum(hw map[int32]int64) int64 {
	var n int64
	for _, o := range hw {
		n += o
	}
	return n
}

func identity(m sluice.Message) (sluice.Message, error) { return m, nil }

// eosLibrdkafka returns a librdkafka source and a producer, transactional
// and bound to it when eos.
func eosLibrdkafka(b *testing.B, br *kafkatest.Broker, group, in string, interval time.Duration, eos bool) (*source.Source, *confluent.Producer) {
	src, err := source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{Brokers: br.Addrs(), Group: group, Topics: []string{in}, CommitInterval: interval}})
	if err != nil {
		b.Fatal(err)
	}
	pcfg := confluent.ProducerConfig{Brokers: br.Addrs()}
	var p *confluent.Producer
	if eos {
		p, err = confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{ProducerConfig: pcfg, TransactionConfig: sink.TransactionConfig{TransactionalID: "bench-" + group}})
	} else {
		p, err = confluent.NewProducer(pcfg)
	}
	if err != nil {
		b.Fatal(err)
	}
	return src, p
}

// eosFranz returns a franz source and a producer, transactional and bound
// to it when eos.
func eosFranz(b *testing.B, br *kafkatest.Broker, group, in string, interval time.Duration, eos bool) (*franz.Source, *franz.Producer) {
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: br.Addrs(), Group: group, Topics: []string{in}, CommitInterval: interval}})
	if err != nil {
		b.Fatal(err)
	}
	var p *franz.Producer
	if eos {
		p, err = franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "bench-" + group}})
	} else {
		p, err = franz.NewProducer(franz.ProducerConfig{Brokers: br.Addrs()})
	}
	if err != nil {
		b.Fatal(err)
	}
	return src, p
}
