package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// counters are what the progress line and the summary show.
type counters struct {
	consumed, produced, deadLettered atomic.Int64
}

// consume runs the pipeline on brokers until ctx is cancelled.
func consume(ctx context.Context, o options, brokers []string, logger *slog.Logger, c *counters) error {
	src, err := source.NewKafka(source.Config{Brokers: brokers, Group: o.group, Topics: []string{o.input}, Logger: logger})
	if err != nil {
		return err
	}
	prod, err := sink.NewProducer(sink.ProducerConfig{Brokers: brokers, Logger: logger})
	if err != nil {
		return err
	}
	defer prod.Close()
	dlq := prod.DeadLetter(o.dlq)
	build := func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		events := stages.Map(in, func(ctx context.Context, r pipeline.Record) (event, error) {
			c.consumed.Add(1)
			return decode(ctx, r)
		}, stages.Name("decode"))
		enriched := stages.Pool(events, o.workers, enrich, stages.Name("enrich"))
		return sink.Produce(enriched, prod, o.output, func(m sink.Message) (sink.Message, error) {
			c.produced.Add(1)
			return m, nil
		}, stages.Name("produce"))
	}
	return pipeline.Run(ctx, src, build,
		pipeline.WithLogger(logger),
		pipeline.WithDeadLetter(func(ctx context.Context, dl pipeline.DeadLetter) error {
			if err := dlq(ctx, dl); err != nil {
				return err
			}
			c.deadLettered.Add(1)
			return nil
		}))
}

// runEmbedded is the newcomer's demo: embedded broker, demo workload, run
// until everything is committed.
func runEmbedded(ctx context.Context, o options, logger *slog.Logger, out io.Writer) error {
	b, err := testkit.StartBroker(
		testkit.WithTopic(o.input, 8), testkit.WithTopic(o.output, 8), testkit.WithTopic(o.dlq, 1))
	if err != nil {
		return err
	}
	defer b.Close()
	return runDemo(ctx, o, b, logger, out)
}

// runDemo fills o.input on b with the demo workload and consumes it until
// the group committed all of it.
func runDemo(ctx context.Context, o options, b *testkit.Broker, logger *slog.Logger, out io.Writer) error {
	fmt.Fprintf(out, "embedded broker on %s; producing %d demo events to %q\n", b.Addr(), o.messages, o.input)
	if err := produceWorkload(ctx, b, o.input, 8, o.messages); err != nil {
		return err
	}

	var c counters
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- consume(runCtx, o, b.Addrs(), logger, &c) }()

	committed := func() int64 { return sumCommitted(b, o.group, o.input) }
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for committed() < int64(o.messages) {
		select {
		case err := <-done:
			return fmt.Errorf("the consumer stopped early: %v", err)
		case <-ctx.Done():
			cancel()
			return <-done
		case <-tick.C:
			progress(out, &c, committed(), start)
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(out, "done: consumed %d, produced %d, dead-lettered %d, committed %d of %d in %v (%.0f msg/s)\n",
		c.consumed.Load(), c.produced.Load(), c.deadLettered.Load(), committed(), o.messages,
		elapsed.Round(time.Millisecond), float64(o.messages)/elapsed.Seconds())
	return nil
}

// runCluster consumes a real cluster until ctx is cancelled (a signal).
func runCluster(ctx context.Context, o options, brokers []string, logger *slog.Logger, out io.Writer) error {
	var c counters
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- consume(ctx, o, brokers, logger, &c) }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			fmt.Fprintf(out, "stopped: consumed %d, produced %d, dead-lettered %d\n",
				c.consumed.Load(), c.produced.Load(), c.deadLettered.Load())
			return err
		case <-tick.C:
			progress(out, &c, -1, start)
		}
	}
}

func progress(out io.Writer, c *counters, committed int64, start time.Time) {
	n := c.consumed.Load()
	line := fmt.Sprintf("consumed %d, produced %d, dead-lettered %d", n, c.produced.Load(), c.deadLettered.Load())
	if committed >= 0 {
		line += fmt.Sprintf(", committed %d", committed)
	}
	fmt.Fprintf(out, "%s (%.0f msg/s)\n", line, float64(n)/time.Since(start).Seconds())
}

// sumCommitted adds up the group's committed offsets on topic.
func sumCommitted(b *testkit.Broker, group, topic string) int64 {
	gi := b.Cluster().GroupInfo(group)
	if gi == nil {
		return 0
	}
	var sum int64
	for _, c := range gi.Commits[topic] {
		sum += c.Offset
	}
	return sum
}
