package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// telemetry is the consumer's metrics registry and health probes, served
// on --metrics-addr. The progress line and the summary read the same
// counters that /metrics exports.
type telemetry struct {
	reg      *prometheus.Registry
	metrics  *metrics.Metrics
	health   *metrics.Health
	produced atomic.Int64 // results handed to the sink: messages to the producer, or rows (no sluice_ metric counts these)
}

func newTelemetry() (*telemetry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	health, err := metrics.NewHealth()
	if err != nil {
		return nil, err
	}
	return &telemetry{reg: reg, metrics: m, health: health}, nil
}

// hooks registers the metrics and the health probes with Run.
func (t *telemetry) hooks() pipeline.Option { return pipeline.WithHooks(t.metrics, t.health) }

// consumed is sluice_records_delivered_total summed over topics.
func (t *telemetry) consumed() int64 { return t.sum("sluice_records_delivered_total") }

// deadLettered is sluice_records_dead_lettered_total summed over topics
// and stages.
func (t *telemetry) deadLettered() int64 { return t.sum("sluice_records_dead_lettered_total") }

// sum adds up every series of the counter name in the registry.
func (t *telemetry) sum(name string) int64 {
	mfs, err := t.reg.Gather()
	if err != nil {
		return -1
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return int64(total)
}

// handler serves /metrics, /healthz and /readyz.
func (t *telemetry) handler() (http.Handler, error) { return metrics.Handler(t.reg, t.health) }

// serve listens on addr (nothing when addr is empty) and serves h until
// stop, which shuts the server down and waits for it. It returns the
// address it listens on.
func serve(addr string, h http.Handler) (bound string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // ErrServerClosed after Shutdown
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-served
	}, nil
}

// startTelemetry creates the telemetry and serves it on o.metricsAddr.
func startTelemetry(o options, out io.Writer) (*telemetry, func(), error) {
	t, err := newTelemetry()
	if err != nil {
		return nil, nil, err
	}
	h, err := t.handler()
	if err != nil {
		return nil, nil, err
	}
	addr, stop, err := serve(o.metricsAddr, h)
	if err != nil {
		return nil, nil, err
	}
	if addr != "" {
		fmt.Fprintf(out, "metrics on http://%s/metrics, probes on /healthz and /readyz\n", addr)
	}
	return t, stop, nil
}

// consume runs the pipeline on brokers, with the source and the producer
// of --client, until ctx is cancelled. With --sink postgres the events go
// to the table and, in exactly-once mode, the sink is the source's
// offset store; the producer sends the dead letters only.
func consume(ctx context.Context, o options, brokers []string, logger *slog.Logger, t *telemetry) error {
	var pg *postgresSink
	if o.toPostgres() {
		var err error
		if pg, err = openPostgres(ctx, o.sinkFlags, logger); err != nil {
			return err
		}
		defer pg.close() // deferred first: runs after the producer closed
	}
	b, err := newBackend(o, brokers, logger, pg.offsetStore())
	if err != nil {
		return err
	}
	defer func() {
		// After Run returned: nothing produces any more.
		if err := b.producer.Close(); err != nil {
			logger.Error("closing the producer", "err", err)
		}
	}()
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		if pg != nil {
			return pg.build(in, o.workers, func() { t.produced.Add(1) })
		}
		events := stages.Map(in, decode, stages.Name("decode"))
		enriched := stages.Pool(events, o.workers, enrich, stages.Name("enrich"))
		return sink.Produce(enriched, b.producer, o.output, func(m sink.Message) (sink.Message, error) {
			t.produced.Add(1)
			return m, nil
		}, stages.Name("produce"))
	}
	// WithDeadLetter keeps the destination's start check (the topic must
	// exist).
	opts := []pipeline.Option{t.hooks(), pipeline.WithLogger(logger), pipeline.WithDeadLetter(b.producer.DeadLetter(o.dlq))}
	return pipeline.Run(ctx, b.src, build, append(opts, o.runOptions()...)...)
}

// runEmbedded is the newcomer's demo: embedded broker, demo workload, run
// until everything is committed.
func runEmbedded(ctx context.Context, o options, logger *slog.Logger, out io.Writer) error {
	b, err := kafkatest.StartBroker(
		kafkatest.WithTopic(o.input, 8), kafkatest.WithTopic(o.output, 8), kafkatest.WithTopic(o.dlq, 1))
	if err != nil {
		return err
	}
	defer b.Close()
	return runDemo(ctx, o, b, logger, out)
}

// runDemo fills o.input on b with the demo workload and consumes it until
// the group committed all of it.
func runDemo(ctx context.Context, o options, b *kafkatest.Broker, logger *slog.Logger, out io.Writer) error {
	fmt.Fprintf(out, "embedded broker on %s; producing %d demo events to %q\n", b.Addr(), o.messages, o.input)
	if err := produceWorkload(ctx, b, o.input, 8, o.messages); err != nil {
		return err
	}

	t, stopServing, err := startTelemetry(o, out)
	if err != nil {
		return err
	}
	defer stopServing()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- consume(runCtx, o, b.Addrs(), logger, t) }()

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
			progress(out, o, t, committed(), start)
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(out, "done: consumed %d, %s %d, dead-lettered %d, committed %d of %d in %v (%.0f msg/s)\n",
		t.consumed(), o.resultsName(), t.produced.Load(), t.deadLettered(), committed(), o.messages,
		elapsed.Round(time.Millisecond), float64(o.messages)/elapsed.Seconds())
	return nil
}

// runCluster consumes a real cluster until ctx is cancelled (a signal).
func runCluster(ctx context.Context, o options, brokers []string, logger *slog.Logger, out io.Writer) error {
	t, stopServing, err := startTelemetry(o, out)
	if err != nil {
		return err
	}
	defer stopServing()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- consume(ctx, o, brokers, logger, t) }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			fmt.Fprintf(out, "stopped: consumed %d, %s %d, dead-lettered %d\n",
				t.consumed(), o.resultsName(), t.produced.Load(), t.deadLettered())
			return err
		case <-tick.C:
			progress(out, o, t, -1, start)
		}
	}
}

func progress(out io.Writer, o options, t *telemetry, committed int64, start time.Time) {
	n := t.consumed()
	line := fmt.Sprintf("consumed %d, %s %d, dead-lettered %d", n, o.resultsName(), t.produced.Load(), t.deadLettered())
	if committed >= 0 {
		line += fmt.Sprintf(", committed %d", committed)
	}
	fmt.Fprintf(out, "%s (%.0f msg/s)\n", line, float64(n)/time.Since(start).Seconds())
}

// sumCommitted adds up the group's committed offsets on topic.
func sumCommitted(b *kafkatest.Broker, group, topic string) int64 {
	committed, err := b.CommittedContext(context.Background(), group, topic)
	if err != nil {
		return 0 // read again on the next tick
	}
	var sum int64
	for _, c := range committed {
		sum += c
	}
	return sum
}
