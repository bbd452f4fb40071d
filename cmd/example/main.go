// Command example is Sluice's demo consumer. With no flags it starts an
// embedded Kafka broker, fills an "events" topic with a demo workload
// (about 1% malformed), runs the pipeline until every event is processed
// and committed, prints a summary and exits 0. With --brokers it consumes a
// real cluster until SIGINT or SIGTERM, then drains, commits and exits 0.
//
// The pipeline: decode each JSON event (Map), enrich it (Pool), produce it
// to the output topic keyed by id; malformed events go to the dead-letter
// topic untouched.
//
// --client chooses the Kafka client of both the source and the producer:
// librdkafka (the default: package source and confluent.NewProducer;
// cgo) or franz (franz-go, pure Go: franz.NewSource and
// franz.NewProducer). Either way the graph ends in sink.Produce and
// dead-letters to the producer's DeadLetter: only the constructors
// differ (client.go).
// Every other flag, the output and the exit status are the same with
// either; any other value is refused with an error naming the flag.
//
// --exactly-once produces the outputs and dead letters and commits the
// input offsets in one Kafka transaction per commit interval
// (confluent.NewTransactionalProducer, or franz.NewTransactionalProducer with
// --client franz, with transactional.id "sluice-example-" plus
// --client-id, or the host and pid):
// readers of the output with isolation.level=read_committed see every event
// once, whatever crashes. See docs/exactly-once.md.
//
// --sink postgres writes the enriched events to a PostgreSQL table
// instead of the output topic (package sink/postgres): --postgres-dsn
// names the database (required), --postgres-table the table ("events";
// created when missing, with the event's fields, the input record's
// topic, partition and offset, and the enriched event as a jsonb payload;
// no unique key, so that a duplicate would be a second row), and
// --postgres-mode exactly-once (the default: each batch's rows and the
// partition's offsets commit in one database transaction, in the offsets
// table sluice_offsets, created when missing, and the source resumes
// where that table says) or at-least-once (rows are written again after
// a crash). Malformed events still go to the dead-letter topic, at least
// once. --exactly-once is refused with it. Each partition's graph is
// decode, enrich into a row, write (package sink/postgres).
//
// Prometheus metrics (see docs/metrics.md) are served on --metrics-addr
// (default 127.0.0.1:9464; empty disables) at /metrics, with liveness and
// readiness probes at /healthz and /readyz.
//
// The consumer group:
//
//   - --group-protocol chooses how the group assigns partitions:
//     cooperative-sticky (the default: librdkafka's
//     partition.assignment.strategy=cooperative-sticky, franz's
//     kgo.CooperativeStickyBalancer; only moved partitions are revoked),
//     range (an eager assignor, kgo.RangeBalancer for franz: every
//     rebalance revokes every partition) or consumer (KIP-848: the broker
//     assigns, incrementally; librdkafka's group.protocol=consumer,
//     franz's kgo.ServerSideBalancer with kgo.StickyBalancer, which asks
//     the broker for its "uniform" assignor). Any other value is refused
//     with an error naming the flag.
//   - --session-timeout (classic protocols only) sets the session timeout
//     (librdkafka's session.timeout.ms, kgo.SessionTimeout), and the
//     heartbeat interval to a tenth of it: how long the group waits for a
//     member that died before it hands its partitions to the others. Zero
//     keeps the client's default: librdkafka's 45s, the franz source's 10s.
//     With consumer, the broker's group.consumer.session.timeout.ms
//     decides, and the flag is refused.
//   - --drain-timeout is how long a revoked partition, or every partition
//     at shutdown, may take to finish its in-flight records
//     (pipeline.WithDrainTimeout).
//   - --client-id is the client id of the consumer and the producer
//     (librdkafka's client.id, kgo.ClientID), which the broker shows for
//     each group member.
//
// The chaos suite (go run ./internal/tools/chaos) runs several of these
// processes in one group and restarts and kills them; see
// docs/reliability.md.
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
	// client is --client, one of clients; empty means the first
	// (librdkafka).
	client string
	// metricsAddr is where /metrics, /healthz and /readyz are served;
	// empty disables the server.
	metricsAddr string
	groupFlags
	// exactlyOnce is --exactly-once (exactlyonce.go).
	exactlyOnce bool
	// sinkFlags are --sink and the --postgres-* flags (postgres.go).
	sinkFlags
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
	flag.StringVar(&o.client, "client", clients[0], "Kafka client of the source and the producer: "+strings.Join(clients, ", ")+" (franz-go, pure Go)")
	flag.StringVar(&o.protocol, "group-protocol", groupProtocols[0], "partition assignment: "+strings.Join(groupProtocols, ", ")+" (KIP-848)")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 0, "classic protocols: session.timeout.ms (heartbeats every tenth of it); 0 keeps the client's default (librdkafka 45s, franz 10s)")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 0, "how long revoked partitions may drain; 0 means the default 20s")
	flag.StringVar(&o.clientID, "client-id", "", "client.id of the consumer and the producer; empty keeps the client's (rdkafka, kgo)")
	flag.BoolVar(&o.exactlyOnce, "exactly-once", false, "produce the outputs and commit the input offsets in one Kafka transaction per commit interval (read the output with isolation.level=read_committed; both clients)")
	flag.StringVar(&o.sink, "sink", sinks[0], "where the enriched events go: "+strings.Join(sinks, ", ")+" (a table, --postgres-*)")
	flag.StringVar(&o.postgresDSN, "postgres-dsn", "", "--sink postgres: the database, e.g. postgres://user@host:5432/db")
	flag.StringVar(&o.postgresMode, "postgres-mode", postgresModes[0], "--sink postgres: "+strings.Join(postgresModes, " or ")+
		" (exactly-once keeps the offsets in the database, in the rows' transactions)")
	flag.StringVar(&o.postgresTable, "postgres-table", "events", "--sink postgres: the table, created when missing")
	flag.BoolVar(&o.verbose, "v", false, "log assignments, revocations and the Kafka client's warnings")
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
	if err := validateClient(o.client); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.groupFlags.validate()...)
	errs = append(errs, o.sinkFlags.validate(o.exactlyOnce)...)
	return errors.Join(errs...)
}
