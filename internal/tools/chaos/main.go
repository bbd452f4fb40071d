// Command chaos is Sluice's multi-process chaos suite: it runs several
// real cmd/example processes in one consumer group against a broker of
// its own per scenario (kfake in process, or Apache Kafka with -broker
// apache), produces the demo workload while it stops, restarts and kills
// them, and then checks, record by record, that nothing was lost, every
// output derives from its input, duplicates happened only where a kill
// allows them, every partition is committed up to its high watermark and
// every SIGTERM was answered by exit 0 in time. See docs/reliability.md.
//
//	go run ./internal/tools/chaos -short   # about 100 s: one step of each kind, librdkafka under every protocol, franz under cooperative-sticky (CI)
//	go run ./internal/tools/chaos          # 6 random steps per client and protocol
//	go run ./internal/tools/chaos -long    # 16 random steps, 3 seeds, more events, both clients under every protocol
//	go run ./internal/tools/chaos -client franz   # only cmd/example --client franz, every protocol
//	go run ./internal/tools/chaos -plan stop-all -rounds 20   # 20 stops of every process at once
//	go run ./internal/tools/chaos -rss     # peak RSS of one consumer, 8 and 256 partitions, one byte budget
//	go run ./internal/tools/chaos -exactly-once   # cmd/example --exactly-once: no duplicate in the read_committed output
//	go run ./internal/tools/chaos -short -exactly-once   # one such scenario, cooperative-sticky, about 30 s
//	go run ./internal/tools/chaos -short -broker apache   # the same on Apache Kafka (a cluster per scenario; Java 17+ and Maven)
//	go run ./internal/tools/chaos -short -sink postgres   # cmd/example --sink postgres: every valid event exactly once in a table
//
// With -sink postgres the suite starts a PostgreSQL server (internal/pgtest)
// with a database per scenario, the consumers write each valid event as a
// row (exactly once, the offsets in the database), and the check reads the
// table instead of the output topic: any duplicate row is a violation,
// kills included; dead letters are at least once.
//
// The plan (which process, which signal, the pauses between steps) is
// deterministic given -seed; how the consumers interleave with it is not.
// Every wait has a deadline; the program exits 1 with a summary on any
// violation, 2 on bad flags, and no child process outlives it.
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

	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// protocols are cmd/example's --group-protocol values.
var protocols = []string{"cooperative-sticky", "range", "consumer"}

// clients are cmd/example's --client values; -client also takes
// clientBoth.
var clients = []string{"librdkafka", "franz"}

const clientBoth = "both"

type options struct {
	short, long bool
	plan        string
	rounds      int
	seed        int64
	seeds       int
	protocols   string
	protocolsOn bool   // -protocols was given
	client      string // -client: one of clients, clientBoth, or empty for the mode's default (combos)
	set         settings
	timeout     time.Duration
	race        bool
	keep        bool
	rss         bool
	rssSet      rssSettings
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "rss-child" {
		os.Exit(rssChild(os.Args[2:]))
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if o.rss {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(runRSS(ctx, o.set.broker, o.rssSet, o.timeout))
	}
	os.Exit(run(o))
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.Func("broker", "the broker every scenario starts, one each: kfake (in this process) or apache (Apache Kafka "+kafkatest.ApacheKafkaVersion+
		", Java processes; needs Java 17+ and Maven) (default kfake)", func(v string) error {
		switch k := kafkatest.Kind(v); k {
		case kafkatest.Kfake, kafkatest.Apache:
			o.set.broker = k
			return nil
		}
		return fmt.Errorf("%q is not one of %s, %s", v, kafkatest.Kfake, kafkatest.Apache)
	})
	fs.BoolVar(&o.short, "short", false, "about 100 s: one step of each kind per protocol, a small workload (CI); with -exactly-once one scenario, about 30 s")
	fs.BoolVar(&o.long, "long", false, "16 random steps, 3 seeds, 1000 events/s")
	fs.StringVar(&o.plan, "plan", planRandom, "steps of each scenario: "+strings.Join(planNames, ", ")+
		" (every step a full stop, or a kill of the joiner after its JoinGroup reply); -short has its fixed plan")
	fs.IntVar(&o.rounds, "rounds", 0, "steps per scenario (default 6; 16 with -long; -short has its fixed plan)")
	fs.Int64Var(&o.seed, "seed", 1, "first seed; the plan is deterministic given the seed")
	fs.IntVar(&o.seeds, "seeds", 0, "how many seeds from -seed (default 1; 3 with -long)")
	fs.StringVar(&o.client, "client", "", "cmd/example --client of the consumers: "+strings.Join(clients, ", ")+" or "+clientBoth+
		" (each under every -protocols); default "+clientBoth+", but with -short franz only under cooperative-sticky")
	fs.StringVar(&o.protocols, "protocols", strings.Join(protocols, ","), "comma-separated group protocols to run")
	fs.IntVar(&o.set.procs, "procs", 3, "consumer processes in the group")
	fs.IntVar(&o.set.rate, "rate", 0, "events per second while the steps run (default 500; 300 with -short, 1000 with -long)")
	fs.IntVar(&o.set.workers, "workers", 4, "cmd/example --workers")
	fs.DurationVar(&o.set.sessionTimeout, "session-timeout", 4*time.Second, "group session timeout (classic: cmd/example --session-timeout; KIP-848: the broker's)")
	fs.DurationVar(&o.set.drainTimeout, "drain-timeout", 5*time.Second, "cmd/example --drain-timeout")
	// After the drain, the source's Close is bounded by its CloseTimeout,
	// then the producer's by its own plus at most 2s.
	fs.DurationVar(&o.set.closeBound, "close-bound", source.DefaultCloseTimeout+confluent.DefaultProducerCloseTimeout+3*time.Second,
		"time a process may take after its drain to close and exit")
	fs.DurationVar(&o.set.recoveryTimeout, "recovery-timeout", 45*time.Second, "longest wait for the group to own and consume every partition again")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long in all (default 5m with -short, 20m, 60m with -long; twice that with -broker apache)")
	fs.BoolVar(&o.race, "race", false, "build cmd/example with the race detector")
	fs.BoolVar(&o.keep, "keep", false, "keep the process logs even when everything passed")
	fs.BoolVar(&o.set.verbose, "v", false, "print every process start")
	fs.StringVar(&o.set.sink, "sink", sinkKafka, "where the consumers write: "+strings.Join(sinks, ", ")+
		" (cmd/example --sink postgres, exactly once, into a PostgreSQL server the suite starts; any duplicate row is a violation)")
	fs.BoolVar(&o.set.exactlyOnce, "exactly-once", false, "run cmd/example --exactly-once and read the outputs with read_committed: any duplicate is a violation")
	fs.BoolVar(&o.rss, "rss", false, "instead of the chaos scenarios: peak RSS of one consumer per partition count (-rss-* flags)")
	o.rssSet.register(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.protocolsOn = o.protocolsOn || f.Name == "protocols" })
	if o.set.broker == "" {
		o.set.broker = kafkatest.Kfake
	}
	o.set.partitions = 8
	if len(o.rssSet.partitions) == 0 {
		o.rssSet.partitions = []int{8, 256}
	}
	preset := func(v *int, normal, short, long int) {
		if *v == 0 {
			*v = normal
			if o.short {
				*v = short
			}
			if o.long {
				*v = long
			}
		}
	}
	preset(&o.rounds, 6, 0, 16)
	preset(&o.seeds, 1, 1, 3)
	preset(&o.set.rate, 500, 300, 1000)
	o.set.backlog = o.set.rate * 2
	if o.timeout == 0 {
		o.timeout = 20 * time.Minute
		if o.short {
			o.timeout = 5 * time.Minute
		}
		if o.long {
			o.timeout = 60 * time.Minute
		}
		if o.set.broker == kafkatest.Apache { // a Java broker per scenario, slower to start and to answer
			o.timeout *= 2
		}
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	if o.short && o.long {
		errs = append(errs, errors.New("-short and -long: choose one"))
	}
	if o.rss {
		if err := o.rssSet.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if !slices.Contains(planNames, o.plan) {
		errs = append(errs, fmt.Errorf("-plan: %q is not one of %s", o.plan, strings.Join(planNames, ", ")))
	} else if o.short && o.plan != planRandom {
		errs = append(errs, fmt.Errorf("-plan=%s with -short: -short has its fixed plan; choose one", o.plan))
	}
	for _, p := range o.protocolList() {
		if !slices.Contains(protocols, p) {
			errs = append(errs, fmt.Errorf("-protocols: %q is not one of %s", p, strings.Join(protocols, ", ")))
		}
	}
	if len(o.protocolList()) == 0 {
		errs = append(errs, errors.New("-protocols is empty"))
	}
	if !slices.Contains(sinks, o.set.sink) {
		errs = append(errs, fmt.Errorf("-sink: %q is not one of %s", o.set.sink, strings.Join(sinks, ", ")))
	}
	if o.set.sink == sinkPostgres && o.set.exactlyOnce {
		errs = append(errs, errors.New("-sink postgres and -exactly-once: the table is exactly once by itself, -exactly-once is Kafka transactions; choose one"))
	}
	if o.set.sink == sinkPostgres && o.rss {
		errs = append(errs, errors.New("-sink postgres and -rss: -rss measures a consumer without a sink; choose one"))
	}
	if o.client != "" && o.client != clientBoth && !slices.Contains(clients, o.client) {
		errs = append(errs, fmt.Errorf("-client: %q is not one of %s, %s", o.client, strings.Join(clients, ", "), clientBoth))
	}
	positive := map[string]int{"-rounds": o.rounds, "-seeds": o.seeds, "-procs": o.set.procs, "-rate": o.set.rate, "-workers": o.set.workers}
	if o.short {
		delete(positive, "-rounds")
	}
	for name, v := range positive {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s=%d: must be at least 1", name, v))
		}
	}
	if o.set.procs < 2 {
		errs = append(errs, fmt.Errorf("-procs=%d: a group of one has nobody to hand partitions to; want at least 2", o.set.procs))
	}
	for name, d := range map[string]time.Duration{"-session-timeout": o.set.sessionTimeout, "-drain-timeout": o.set.drainTimeout,
		"-close-bound": o.set.closeBound, "-recovery-timeout": o.set.recoveryTimeout, "-timeout": o.timeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%v: must be positive", name, d))
		}
	}
	if o.set.sessionTimeout > 0 && o.set.sessionTimeout < time.Second {
		errs = append(errs, fmt.Errorf("-session-timeout=%v: cmd/example needs at least 1s", o.set.sessionTimeout))
	}
	return errors.Join(errs...)
}

func (o options) protocolList() []string {
	var out []string
	for _, p := range strings.Split(o.protocols, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// combo is one client under one group protocol: a scenario per seed.
type combo struct{ client, protocol string }

func (c combo) String() string { return c.client + "/" + c.protocol }

// combos are the clients and protocols to run, in order: every -client
// under every -protocols, except that by default -short runs franz only
// under cooperative-sticky (CI time: each scenario takes about 25 s).
// With -exactly-once, -short runs one scenario, librdkafka under
// cooperative-sticky (about 30 s), unless -protocols or -client is given.
func (o options) combos() []combo {
	cs := clients
	shortEOS := o.short && o.set.exactlyOnce && o.client == "" && !o.protocolsOn
	if shortEOS {
		cs = clients[:1]
	}
	if o.client != "" && o.client != clientBoth {
		cs = []string{o.client}
	}
	var out []combo
	for _, c := range cs {
		for _, p := range o.protocolList() {
			if o.short && o.client == "" && c == "franz" && p != "cooperative-sticky" {
				continue
			}
			if shortEOS && p != "cooperative-sticky" {
				continue
			}
			out = append(out, combo{client: c, protocol: p})
		}
	}
	return out
}

// run runs every scenario and returns the exit status.
func run(o options) (status int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, fmt.Errorf("the -timeout of %v passed", o.timeout))
	defer cancel()

	dir, err := os.MkdirTemp("", "sluice-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	bin, err := buildExample(ctx, dir, o.race)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	var pg *pgtest.Server
	if o.set.sink == sinkPostgres {
		srv, stopPG, err := startPostgres()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		defer func() {
			if err := stopPG(); err != nil {
				fmt.Fprintln(os.Stderr, "chaos: stopping PostgreSQL:", err)
			}
		}()
		pg = srv
	}
	sup := newSupervisor(bin)
	defer func() {
		// Also on a panic: no child outlives the program.
		sup.killAll()
		if r := recover(); r != nil {
			panic(r)
		}
	}()

	mode := fmt.Sprintf("%d steps of plan %s", o.rounds, o.plan)
	if o.short {
		mode = "short plan"
	}
	var names []string
	for _, c := range o.combos() {
		names = append(names, c.String())
	}
	if o.set.exactlyOnce {
		mode += ", exactly once (read_committed, no duplicate allowed)"
	}
	if pg != nil {
		mode += fmt.Sprintf(", PostgreSQL sink on %s (exactly once: no duplicate row allowed; dead letters at least once)", pg.Addr())
	}
	fmt.Printf("chaos: broker %s, %d processes, %s, seeds %d..%d, clients/protocols %s, %d events/s; session timeout %v, drain timeout %v; logs in %s\n",
		o.set.broker, o.set.procs, mode, o.seed, o.seed+int64(o.seeds)-1, strings.Join(names, ","), o.set.rate,
		o.set.sessionTimeout, o.set.drainTimeout, dir)
	began := time.Now()
	var results []result
	for seed := o.seed; seed < o.seed+int64(o.seeds); seed++ {
		plan := shortPlan(seed, o.set.procs)
		if !o.short {
			plan = planFor(o.plan, seed, o.set.procs, o.rounds)
		}
		for _, c := range o.combos() {
			if ctx.Err() != nil {
				break
			}
			s := &scenario{set: o.set, client: c.client, protocol: c.protocol, seed: seed, plan: plan, bin: bin, sup: sup,
				logDir: logDirFor(dir, c, seed), out: os.Stdout, pg: pg}
			results = append(results, s.run(ctx))
		}
	}
	failed := printSummary(os.Stdout, results, time.Since(began))
	if ctx.Err() != nil {
		fmt.Printf("chaos: stopped early: %v\n", context.Cause(ctx))
		failed = true
	}
	if failed || o.keep {
		fmt.Printf("chaos: process logs kept in %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	if failed {
		return 1
	}
	return 0
}
