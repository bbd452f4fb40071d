package franz_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/consumebench"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// BenchmarkConsume consumes consumeMsgs records of 100 bytes from 8
// partitions of the embedded broker per op, with a fresh group each op:
// raw is a bare kgo PollFetches loop; each is franz.NewSource with one
// Each stage; graph is graph (b) of docs/performance.md, Map → Pool(8) →
// Batch(500, 100ms) → Each. Run the three in one invocation:
//
//	go test -run '^$' -bench Consume -benchtime 3x ./franz/
//
// An op lasts from creating the client (or Run) until every record was
// handed to the last stage (raw: polled). Metrics: msg/s over the ops;
// cpu-ns/msg, the process's user+system CPU (the embedded broker's
// included, which all cases pay alike) per record; allocs/msg, Go heap
// allocations per record (kgo's and the broker's included: compare with
// raw for Sluice's own).
func BenchmarkConsume(b *testing.B) {
	const parts, consumeMsgs = 8, 400_000
	br := kafkatest.NewBroker(b, kafkatest.WithTopic("in", parts))
	br.Fill(b, "in", consumeMsgs/parts, 100)
	groups := 0
	group := func() string { groups++; return fmt.Sprintf("bench-%d", groups) }
	cases := []struct {
		name string
		run  func(b *testing.B, group string, n int)
	}{
		{"raw", func(b *testing.B, group string, n int) { consumeRaw(b, br.Addrs(), group, n) }},
		{"each", func(b *testing.B, group string, n int) {
			consumeSluice(b, br.Addrs(), group, n, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record], seen *atomic.Int64) pipeline.End {
				return stages.Each(in, func(_ context.Context, r sluice.Record) error {
					seen.Add(1)
					return nil
				})
			})
		}},
		{"graph", func(b *testing.B, group string, n int) {
			consumeSluice(b, br.Addrs(), group, n, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record], seen *atomic.Int64) pipeline.End {
				lens := stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) { return len(r.Value), nil })
				pooled := stages.Pool(lens, 8, func(_ context.Context, v int) (int, error) { return v, nil })
				return stages.Each(stages.Batch(pooled, 500, 100*time.Millisecond), func(_ context.Context, vs []int) error {
					seen.Add(int64(len(vs)))
					return nil
				})
			})
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var w consumebench.Window
			w.Start()
			for b.Loop() {
				c.run(b, group(), consumeMsgs)
			}
			w.Stop()
			w.Report(b, b.N*consumeMsgs)
		})
	}
}

// consumeRaw polls n records with a bare kgo group consumer, committing
// every second and at the end, as internal/tools/bench's raw-franz.
func consumeRaw(b *testing.B, brokers []string, group string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	last := time.Now()
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		seen += fs.NumRecords()
		if time.Since(last) > time.Second {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				b.Fatal(err)
			}
			last = time.Now()
		}
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		b.Fatal(err)
	}
}

// consumeSluice runs build on franz.NewSource until n records reached
// the counter it passes, then stops Run.
func consumeSluice(b *testing.B, brokers []string, group string, n int, build func(*pipeline.Partition, pipeline.Stream[sluice.Record], *atomic.Int64) pipeline.End) {
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: brokers, Group: group, Topics: []string{"in"}}})
	if err != nil {
		b.Fatal(err)
	}
	var seen atomic.Int64
	done := make(chan struct{})
	var once atomic.Bool
	consumebench.RunUntil(b, done, func(ctx context.Context) error {
		return pipeline.Run(ctx, src, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return build(p, in, &seen)
		}, pipeline.WithHooks(doneHook{seen: &seen, n: int64(n), done: done, once: &once}), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
	})
}

// doneHook closes done once seen reached n, checked at every completion.
type doneHook struct {
	seen *atomic.Int64
	n    int64
	done chan struct{}
	once *atomic.Bool
}

func (h doneHook) OnRecordsCompleted(sluice.TopicPartition, int, int64) {
	if h.seen.Load() >= h.n && h.once.CompareAndSwap(false, true) {
		close(h.done)
	}
}
