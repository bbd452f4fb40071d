package source

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/consumebench"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Benchmarks consume benchMsgs records of benchValue bytes from benchParts
// partitions of an embedded broker, with a fresh group per iteration. The
// msg/s metric covers first to last record (it leaves out joining the group
// and closing the client, which ns/op includes).
//
//	go test -run '^$' -bench . -benchtime 3x ./source/
const (
	benchMsgs  = 200_000
	benchParts = 8
	benchValue = 100
)

var (
	benchOnce   sync.Once
	benchBroker *kafkatest.Broker
	benchGroups int
)

// benchTopic fills a shared broker once; TestMain closes it.
func benchTopic(b *testing.B) *kafkatest.Broker {
	benchOnce.Do(func() {
		br, err := kafkatest.StartBroker(kafkatest.WithTopic("bench", benchParts))
		if err != nil {
			b.Fatal(err)
		}
		benchBroker = br
		br.Fill(b, "bench", benchMsgs/benchParts, benchValue)
	})
	if benchBroker == nil {
		b.Fatal("bench broker failed to start")
	}
	return benchBroker
}

func nextGroup() string {
	benchGroups++
	return fmt.Sprintf("bench-%d", benchGroups)
}

func reportRate(b *testing.B, total int, window time.Duration) {
	b.ReportMetric(float64(total)/window.Seconds(), "msg/s")
}

// tunings are the configurations compared: the source's default and
// librdkafka's default fetch.queue.backoff.ms (1000).
var tunings = []struct {
	name string
	ov   map[string]any
}{
	{"default", nil},
	{"librdkafka-backoff", map[string]any{"fetch.queue.backoff.ms": 1000}},
}

// rawConsumer returns a bare confluent-kafka-go consumer with the
// librdkafka settings a source of cfg would have, subscribed to its
// topics.
func rawConsumer(b *testing.B, cfg Config) *kafka.Consumer {
	b.Helper()
	cm, err := cfg.configMap(pipeline.DefaultDrainTimeout)
	if err != nil {
		b.Fatal(err)
	}
	delete(cm, "go.logs.channel.enable")
	cm["log_level"] = 3
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.SubscribeTopics(cfg.Topics, nil); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkRawPollLoop is the floor: a bare confluent-kafka-go consumer
// polling messages and dropping them, same librdkafka settings as the source.
func BenchmarkRawPollLoop(b *testing.B) {
	benchTunings(b, func(b *testing.B, cfg Config) time.Duration {
		c := rawConsumer(b, cfg)
		var n int
		var first time.Time
		for n < benchMsgs {
			switch e := c.Poll(100).(type) {
			case *kafka.Message:
				if n == 0 {
					first = time.Now()
				}
				n++
			case kafka.Error:
				if e.IsFatal() {
					b.Fatal(e)
				}
			}
		}
		window := time.Since(first)
		_ = c.Close()
		return window
	})
}

// BenchmarkKafkaSource runs the source with a group that counts records.
func BenchmarkKafkaSource(b *testing.B) {
	benchTunings(b, func(b *testing.B, cfg Config) time.Duration {
		src, err := NewSource(cfg)
		if err != nil {
			b.Fatal(err)
		}
		g := &countGroup{target: benchMsgs, done: make(chan struct{}), wake: make(chan struct{}, 1)}
		consumebench.RunUntil(b, g.done, func(ctx context.Context) error { return src.Run(ctx, g) })
		return g.last.Sub(g.first)
	})
}

// benchTunings runs consume as a sub-benchmark of b for each of the
// tunings, once an iteration with the config of a new group on the bench
// topic, and reports the rate over the windows consume returns.
func benchTunings(b *testing.B, consume func(b *testing.B, cfg Config) time.Duration) {
	br := benchTopic(b)
	for _, tc := range tunings {
		b.Run(tc.name, func(b *testing.B) {
			var window time.Duration
			for range b.N {
				cfg := benchConfig(br)
				cfg.Overrides = tc.ov
				window += consume(b, cfg)
			}
			reportRate(b, b.N*benchMsgs, window)
		})
	}
}

// benchSource returns a source of a new group on the bench topic of br
// (benchConfig), failing b if it cannot be made.
func benchSource(b *testing.B, br *kafkatest.Broker) *Source {
	b.Helper()
	src, err := NewSource(benchConfig(br))
	if err != nil {
		b.Fatal(err)
	}
	return src
}

// benchConfig is the config of a source of a new group on the bench topic
// of br.
func benchConfig(br *kafkatest.Broker) Config {
	return Config{GroupConfig: sluice.GroupConfig{Brokers: br.Addrs(), Group: nextGroup(), Topics: []string{"bench"}}}
}

// countGroup is the cheapest possible Group: it counts delivered records.
type countGroup struct {
	target      int
	n           int
	first, last time.Time
	done        chan struct{}
	wake        chan struct{}
	next        map[sluice.TopicPartition]int64
}

func (g *countGroup) Assign([]sluice.TopicPartition) error { return nil }
func (g *countGroup) Revoke([]sluice.TopicPartition) []sluice.Offset {
	return nil
}
func (g *countGroup) Lose([]sluice.TopicPartition)                    {}
func (g *countGroup) Shutdown() []sluice.Offset                       { return nil }
func (g *countGroup) Unfinished() []sluice.TopicPartition             { return nil }
func (g *countGroup) Resumable() []sluice.TopicPartition              { return nil }
func (g *countGroup) Wake() <-chan struct{}                           { return g.wake }
func (g *countGroup) DrainTimeout() time.Duration                     { return 20 * time.Second }
func (g *countGroup) MaxInFlight() int                                { return pipeline.DefaultMaxInFlight }
func (g *countGroup) MaxInFlightBytes() int64                         { return pipeline.DefaultMaxInFlightBytes }
func (g *countGroup) Polled()                                         {}
func (g *countGroup) Joined()                                         {}
func (g *countGroup) HighWatermark(sluice.TopicPartition, int64)      {}
func (g *countGroup) Committed([]sluice.Offset, time.Duration, error) {}

func (g *countGroup) Offsets() []sluice.Offset {
	var out []sluice.Offset
	for tp, n := range g.next {
		out = append(out, sluice.Offset{TopicPartition: tp, Next: n})
	}
	return out
}

func (g *countGroup) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	if g.n == 0 {
		g.first = time.Now()
		g.next = map[sluice.TopicPartition]int64{}
	}
	g.n += len(recs)
	g.next[tp] = recs[len(recs)-1].Offset + 1
	if g.n >= g.target && g.last.IsZero() {
		g.last = time.Now()
		close(g.done)
	}
	return false
}

// BenchmarkPipeline is the whole of Sluice: the source, pipeline.Run and a
// per-partition graph (Map, then Discard, so commits follow completion).
// Compare its msg/s with BenchmarkRawPollLoop from the same run.
func BenchmarkPipeline(b *testing.B) {
	br := benchTopic(b)
	var window time.Duration
	for range b.N {
		src := benchSource(b, br)
		var n atomic.Int64
		var first, last atomic.Int64 // unix nanos
		done := make(chan struct{})
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			sizes := stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
				now := time.Now().UnixNano()
				first.CompareAndSwap(0, now)
				if n.Add(1) == benchMsgs {
					last.Store(now)
					close(done)
				}
				return len(r.Value), nil
			})
			return stages.Discard(sizes)
		}
		consumebench.RunUntil(b, done, func(ctx context.Context) error { return pipeline.Run(ctx, src, build) })
		window += time.Duration(last.Load() - first.Load())
	}
	reportRate(b, b.N*benchMsgs, window)
}
