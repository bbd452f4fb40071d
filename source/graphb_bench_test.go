package source

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/consumebench"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// BenchmarkGraphB is the reference graph of the benchmarks, Map → Pool(8)
// → Batch(500) → Each (graph b of docs/performance.md), on the embedded broker (benchMsgs records in benchParts
// partitions), next to its raw twin: a bare confluent-kafka-go poll loop
// doing the same user work in one goroutine (the map function per message,
// the each function per 500 messages of a partition). Run the two in one
// invocation and compare:
//
//	go test -run '^$' -bench GraphB -benchtime 1x -count 5 ./source/
//
// Metrics cover the first to the last record: msg/s; cpu-ns/msg, the
// process's user+system CPU time (the embedded broker's included, which
// both pay alike) per record; allocs/msg, Go heap allocations per record
// (confluent-kafka-go's own conversion included). The sluice case also
// reports pauses/op (backpressure), partial-batches/op (batches Batch
// emitted with fewer than 500 values: its 100 ms timer fired, so the
// last batch of a partition waits for it too) and tail-ms, the time from
// the last record's map call to the end of the window (the raw loop has
// no such tail: it stops at the last record polled).
func BenchmarkGraphB(b *testing.B) {
	br := benchTopic(b)
	b.Run("raw", func(b *testing.B) {
		var w consumebench.Window
		for range b.N {
			c := rawConsumer(b, Config{GroupConfig: sluice.GroupConfig{Brokers: br.Addrs(), Group: nextGroup(), Topics: []string{"bench"}}})
			batches := make(map[int32][]int, benchParts)
			var n int
			for n < benchMsgs {
				switch e := c.Poll(100).(type) {
				case *kafka.Message:
					if n == 0 {
						w.Start()
					}
					n++
					v := graphBMap(e.Value)
					p := e.TopicPartition.Partition
					batches[p] = append(batches[p], v)
					if len(batches[p]) == 500 {
						graphBEach(batches[p])
						batches[p] = make([]int, 0, 500) // Batch hands each batch over
					}
				case kafka.Error:
					if e.IsFatal() {
						b.Fatal(e)
					}
				}
			}
			w.Stop()
			_ = c.Close()
		}
		w.Report(b, b.N*benchMsgs)
	})
	b.Run("sluice", func(b *testing.B) {
		var w consumebench.Window
		var pauses pauseCount
		var partial atomic.Int64
		var tail time.Duration
		for range b.N {
			src := benchSource(b, br)
			var started atomic.Bool
			var n, mapped atomic.Int64
			var lastMap atomic.Int64 // UnixNano of the last record's map call
			done := make(chan struct{})
			build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				vals := stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) {
					if started.CompareAndSwap(false, true) {
						w.Start()
					}
					if mapped.Add(1) == benchMsgs {
						lastMap.Store(time.Now().UnixNano())
					}
					return graphBMap(r.Value), nil
				})
				pooled := stages.Pool(vals, 8, func(_ context.Context, v int) (int, error) { return v, nil })
				return stages.Each(stages.Batch(pooled, 500, 100*time.Millisecond), func(_ context.Context, vs []int) error {
					graphBEach(vs)
					if len(vs) < 500 {
						partial.Add(1)
					}
					if n.Add(int64(len(vs))) == benchMsgs {
						w.Stop()
						tail += time.Duration(time.Now().UnixNano() - lastMap.Load())
						close(done)
					}
					return nil
				})
			}
			consumebench.RunUntil(b, done, func(ctx context.Context) error {
				return pipeline.Run(ctx, src, build, pipeline.WithHooks(&pauses))
			})
		}
		w.Report(b, b.N*benchMsgs)
		b.ReportMetric(float64(pauses.n.Load())/float64(b.N), "pauses/op")
		b.ReportMetric(float64(partial.Load())/float64(b.N), "partial-batches/op")
		b.ReportMetric(tail.Seconds()*1000/float64(b.N), "tail-ms")
		b.ReportMetric(float64(pauses.sum.Load())/float64(max(pauses.samples.Load(), 1)), "inflight-avg")
		b.ReportMetric(float64(pauses.peak.Load()), "inflight-max")
	})
}

// pauseCount counts the partitions the runtime paused (backpressure) and
// samples the records in flight at each delivery.
type pauseCount struct {
	n                  atomic.Int64
	samples, sum, peak atomic.Int64
}

func (p *pauseCount) OnPartitionPaused(sluice.TopicPartition) { p.n.Add(1) }

func (p *pauseCount) OnInFlight(records, _ int64) {
	p.samples.Add(1)
	p.sum.Add(records)
	if records > p.peak.Load() {
		p.peak.Store(records)
	}
}

var graphBSink atomic.Int64

func graphBMap(v []byte) int { return len(v) }

func graphBEach(vs []int) {
	s := 0
	for _, v := range vs {
		s += v
	}
	graphBSink.Add(int64(s))
}
