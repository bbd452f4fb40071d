// Command example is Sluice's demo consumer. With no flags it starts an
// embedded Kafka broker, fills an "events" topic with a demo workload
// (about 1% malformed), runs the pipeline until every event is processed
// and committed, prints a summary and exits 0. With --brokers it consumes a
// real cluster until SIGINT or SIGTERM, then drains, commits and exits 0.
//
// The pipeline: decode each JSON event (Map), enrich it (Pool), produce it
// to the output topic keyed by id (sink.Produce); malformed events go to
// the dead-letter topic untouched.
//
// Prometheus metrics (see docs/metrics.md) are served on --metrics-addr
// (default 127.0.0.1:9464; empty disables) at /metrics, with liveness and
// readiness probes at /healthz and /readyz.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

type options struct {
	brokers  string
	group    string
	input    string
	output   string
	dlq      string
	workers  int
	messages int
	verbose  bool
	// metricsAddr is where /metrics, /healthz and /readyz are served;
	// empty disables the server.
	metricsAddr string
}

func main() {
	var o options
	flag.StringVar(&o.brokers, "brokers", "", "comma-separated bootstrap brokers; empty starts an embedded broker with a demo workload")
	flag.StringVar(&o.group, "group", "sluice-example", "consumer group")
	flag.StringVar(&o.input, "input", "events", "input topic")
	flag.StringVar(&o.output, "output", "events-enriched", "output topic")
	flag.StringVar(&o.dlq, "dlq", "events-dlq", "dead-letter topic")
	flag.IntVar(&o.workers, "workers", 8, "parallel enrich calls per partition")
	flag.IntVar(&o.messages, "messages", 100_000, "demo events to produce (embedded mode only)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:9464", "serve /metrics, /healthz and /readyz on this address; empty disables")
	flag.BoolVar(&o.verbose, "v", false, "log assignments, revocations and librdkafka warnings")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(2)
	}
	level := slog.LevelError
	if o.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if o.brokers == "" {
		err = runEmbedded(ctx, o, logger, os.Stdout)
	} else {
		err = runCluster(ctx, o, strings.Split(o.brokers, ","), logger, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	var errs []error
	if o.workers <= 0 {
		errs = append(errs, fmt.Errorf("--workers=%d: must be at least 1", o.workers))
	}
	if o.messages <= 0 {
		errs = append(errs, fmt.Errorf("--messages=%d: must be at least 1", o.messages))
	}
	for flagName, v := range map[string]string{"--group": o.group, "--input": o.input, "--output": o.output, "--dlq": o.dlq} {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("%s is empty", flagName))
		}
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-addr=%s: %w", o.metricsAddr, err))
		}
	}
	return errors.Join(errs...)
}
