// Command bench measures Sluice against the raw client loops it is built
// on, on kfake or on Apache Kafka:
//
//	go run ./internal/tools/bench                 # every case, 1M records of 100 B, 8 partitions, 3 runs
//	go run ./internal/tools/bench -broker apache  # the same on Apache Kafka (Java 17+ and Maven needed)
//	go run ./internal/tools/bench -records 50000 -runs 1 -cases raw-franz,sluice-franz-graph
//	go run ./internal/tools/bench -cases raw-pg-franz,sluice-pg-franz-alo,sluice-pg-franz-eos -no-memory -no-slow
//	go run ./internal/tools/bench -memory         # peak RSS of graph (b) with 8 and 256 partitions
//	go run ./internal/tools/bench -slow           # a 1 ms call per record through Pool(32), 64 partitions
//	go run ./internal/tools/bench -cpuprofile /tmp/prof   # one CPU profile per case and run
//	go run ./internal/tools/bench -memory -memprofile /tmp/prof   # one heap profile per run
//	go run ./internal/tools/bench -cases sluice-franz-graph -runs 1 -trace /tmp/trace   # one execution trace per run
//
// The broker runs in a child process of this program ("bench broker"):
// kfake in that process (-broker kfake, the default), or Apache Kafka in
// Java processes it starts and stops (-broker apache), which end with it
// however it ends. Every measured run is a child process too ("bench run
// -case NAME ..."), so the CPU time and peak RSS a run reports are its
// own; the broker's CPU time during each run (its child process and
// everything it started) is reported beside it. Cases: the raw
// confluent-kafka-go poll loop (with package source's prefetch queue, and
// with librdkafka's own), the raw franz-go loop, each raw loop handing its
// records to a goroutine per partition (-handoff: the least a consumer
// that processes records off its poll loop does), Sluice on each
// backend with (a) one Each stage and (b) Map → Pool(8) → Batch(500) →
// Each; consume → produce: a raw loop on each client and Sluice's Map →
// Pool(8) → Produce; and the dead-letter pair on each backend: Map →
// Discard with the producer's dead-letter destination, every record valid
// (-valid) or every record invalid (-dlq); consume → PostgreSQL: a raw
// loop on each client (batches of 500 rows through COPY, one transaction
// each, then the offsets committed) and Sluice's Map → sink/postgres
// Writer, at least once (-alo) and exactly once (-eos), on a PostgreSQL
// server the benchmark starts (internal/pgtest) when a PostgreSQL case is
// asked for. Every run is verified: each input record consumed exactly
// once with its value intact, the group's commits equal to the end
// offsets, for consume → produce and -dlq every input record in the output
// topic exactly once, and for the PostgreSQL cases every input record's
// row in the table exactly once (and for -eos the positions stored at the
// partitions' ends). The report gives the median msg/s (first record to
// last done), its ratio to the raw loop of the same client (for -dlq, to
// the -valid case), CPU per record and peak RSS (for the PostgreSQL cases,
// in a table of their own with the server's CPU per row), then every run.
// The memory section runs graph (b) with 8 and 256 partitions under a 16
// MiB budget; the slow section runs a 1 ms call per record through
// Pool(32) on 64 partitions on each client (see slow.go). Exit status: 0
// when every run passed its checks, 1 otherwise, 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// inputTopic is the topic of the speed runs.
const inputTopic = "in"

// childEnv marks a child process of the benchmark; a test binary running
// as one (see main_test.go) dispatches on it.
const childEnv = "SLUICE_BENCH_CHILD"

// memoryPartitions are the partition counts of the memory section.
var memoryPartitions = []int{8, 256}

// defaultMemoryBudget is the in-flight byte budget of the memory runs
// when -budget is not set.
const defaultMemoryBudget = 16 << 20

type options struct {
	records, partitions, value, runs int
	cases                            []string
	cpuprofile, memprofile, trace    string
	budget                           int64
	memory, noMemory                 bool
	slow, noSlow                     bool
	timeout                          time.Duration
	broker                           kafkatest.Kind
}

// runSpeed reports whether the speed section runs: unless -memory or
// -slow asked for only those.
func (o options) runSpeed() bool { return !o.memory && !o.slow }

// runMemory reports whether the memory section runs.
func (o options) runMemory() bool { return o.memory || (!o.slow && !o.noMemory) }

// runSlow reports whether the slow section runs.
func (o options) runSlow() bool { return o.slow || (!o.memory && !o.noSlow) }

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "broker" || os.Args[1] == "run") {
		os.Exit(childMain(os.Args[1:]))
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// childMain runs a child mode: args[0] is "broker" or "run".
func childMain(args []string) int {
	switch args[0] {
	case "broker":
		return brokerChild(args[1:])
	case "run":
		return runChild(args[1:])
	}
	fmt.Fprintf(os.Stderr, "bench: unknown child mode %q\n", args[0])
	return 2
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.records, "records", 1_000_000, "records in the input topic")
	fs.IntVar(&o.partitions, "partitions", 8, "partitions of the input topic")
	fs.IntVar(&o.value, "value", 100, fmt.Sprintf("value bytes per record (at least %d)", minValueSize))
	fs.IntVar(&o.runs, "runs", 3, "runs of every case (rounds alternate the case order)")
	list := fs.String("cases", "all", "comma-separated cases: all, or some of "+strings.Join(caseOrder, ", "))
	fs.StringVar(&o.memprofile, "memprofile", "", "directory for one heap profile per run, taken when its last record is done (<section>-<case>-p<partitions>-<run>.heap)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "directory for one CPU profile per run (<section>-<case>-p<partitions>-<run>.pprof, section speed or memory)")
	fs.StringVar(&o.trace, "trace", "", "directory for one execution trace per run (<section>-<case>-p<partitions>-<run>.trace; go tool trace reads it)")
	fs.Int64Var(&o.budget, "budget", 0, fmt.Sprintf("Sluice's in-flight byte budget, pipeline.WithMaxInFlightBytes (0: pipeline's default for the speed runs, %d MiB for the memory and slow runs)", defaultMemoryBudget>>20))
	fs.BoolVar(&o.memory, "memory", false, "run only the memory section: graph (b) on each backend with 8 and 256 partitions")
	fs.BoolVar(&o.noMemory, "no-memory", false, "skip the memory section")
	fs.BoolVar(&o.slow, "slow", false, fmt.Sprintf("run only the slow section (with -memory: those two): a %v call per record through Pool(%d) on %d partitions, on each backend", slowCall, slowWorkers, slowPartitions))
	fs.BoolVar(&o.noSlow, "no-slow", false, "skip the slow section")
	brokerName := fs.String("broker", string(kafkatest.Kfake), fmt.Sprintf("the broker: %s (franz-go's kfake) or %s (Apache Kafka %s in Java processes; needs Java 17+ and Maven)", kafkatest.Kfake, kafkatest.Apache, kafkatest.ApacheKafkaVersion))
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "longest one run may take")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	if o.records <= 0 {
		errs = append(errs, fmt.Errorf("-records=%d: must be at least 1", o.records))
	}
	if o.partitions <= 0 || o.partitions > o.records {
		errs = append(errs, fmt.Errorf("-partitions=%d: must be between 1 and -records", o.partitions))
	}
	switch kafkatest.Kind(*brokerName) {
	case kafkatest.Kfake, kafkatest.Apache:
		o.broker = kafkatest.Kind(*brokerName)
	default:
		errs = append(errs, fmt.Errorf("-broker=%q: want %s or %s", *brokerName, kafkatest.Kfake, kafkatest.Apache))
	}
	if o.runMemory() {
		if m := slices.Max(memoryPartitions); o.records < m {
			errs = append(errs, fmt.Errorf("-records=%d: the memory section needs at least %d (or -no-memory)", o.records, m))
		}
	}
	if o.runSlow() && o.records < slowPartitions {
		errs = append(errs, fmt.Errorf("-records=%d: the slow section needs at least %d (or -no-slow)", o.records, slowPartitions))
	}
	if o.value < minValueSize {
		errs = append(errs, fmt.Errorf("-value=%d: must be at least %d", o.value, minValueSize))
	}
	if o.runs <= 0 {
		errs = append(errs, fmt.Errorf("-runs=%d: must be at least 1", o.runs))
	}
	if o.budget < 0 {
		errs = append(errs, fmt.Errorf("-budget=%d: must not be negative", o.budget))
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("-timeout=%v: must be positive", o.timeout))
	}
	if o.memory && o.noMemory {
		errs = append(errs, errors.New("-memory and -no-memory contradict each other"))
	}
	if o.slow && o.noSlow {
		errs = append(errs, errors.New("-slow and -no-slow contradict each other"))
	}
	cs, err := parseCases(*list)
	if err != nil {
		errs = append(errs, err)
	}
	o.cases = cs
	return o, errors.Join(errs...)
}

// parseCases reads -cases: "all" or a comma-separated list of known cases,
// returned in report order.
func parseCases(list string) ([]string, error) {
	if strings.TrimSpace(list) == "all" {
		return slices.Clone(caseOrder), nil
	}
	want := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if !slices.Contains(caseOrder, c) {
			return nil, fmt.Errorf("-cases: unknown case %q (want all, or some of %s)", c, strings.Join(caseOrder, ", "))
		}
		want[c] = true
	}
	var out []string
	for _, c := range caseOrder {
		if want[c] {
			out = append(out, c)
		}
	}
	return out, nil
}
