package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// settings are the knobs every scenario shares.
type settings struct {
	broker     kafkatest.Kind // the broker every scenario starts (one each)
	procs      int            // consumer processes in the group
	partitions int32          // of the input and output topics
	rate       int            // events per second produced while the steps run
	backlog    int            // events produced before the consumers start
	workers    int            // cmd/example --workers

	sessionTimeout time.Duration // classic session.timeout.ms; KIP-848 broker session timeout
	drainTimeout   time.Duration // cmd/example --drain-timeout
	// closeBound is how long a process may take, after its drain, to
	// close the consumer and the producer and exit: a SIGTERM must be
	// answered by exit 0 within drainTimeout+closeBound.
	closeBound      time.Duration
	recoveryTimeout time.Duration // longest wait for the group to own and consume every partition again
	verbose         bool
	// exactlyOnce runs cmd/example --exactly-once: the output and
	// dead-letter topics are read with read_committed and every
	// duplicate is a violation; a process that stops with
	// exactlyonce.ErrAborted is restarted (aborts.go).
	exactlyOnce bool
	// sink is where cmd/example writes: sinkKafka (the output topic) or
	// sinkPostgres (--sink postgres, exactly once: a table in a database
	// of the scenario's own, read back and checked instead of the
	// output topic; postgres.go).
	sink string
}

// dupAgeBound is the oldest work a kill may leave uncommitted: offsets
// are stored every CommitInterval and librdkafka commits them every
// CommitInterval (see source/commit.go), plus a second for delivery
// reports and scheduling on a loaded machine.
const dupAgeBound = 2*demo.CommitInterval + time.Second

// scenario is one run of a plan under one group protocol, on a broker of
// its own.
type scenario struct {
	set      settings
	client   string // cmd/example --client
	protocol string
	seed     int64
	plan     []step
	bin      string
	logDir   string
	out      io.Writer
	sup      *supervisor

	c       *cluster
	mon     *monitor
	began   time.Time
	live    map[int]*proc // slot -> running incarnation
	inc     map[int]int   // slot -> last incarnation started
	all     []*proc
	windows map[int32][]window
	txns    *killedTxns // exactly-once mode: the transactions kills left open
	// pg is the PostgreSQL server of -sink postgres (shared by the
	// run's scenarios) and dsn the scenario's database on it.
	pg  *pgtest.Server
	dsn string
	res result
}

// result is one row of the summary table, and the details behind it.
type result struct {
	client   string
	protocol string
	seed     int64
	steps    int

	restarts, kills, stopAlls int
	events                    int
	checked                   bool // the topics were read and checked
	v                         verdict

	slowestShutdown, slowestRecovery       time.Duration
	slowestShutdownWho, slowestRecoveryWhy string

	exactlyOnce bool // the scenario ran cmd/example --exactly-once
	// exactly-once mode: the processes restarted after exiting on
	// exactlyonce.ErrAborted (aborts.go), how many SIGKILLs left a
	// transaction open, and how long the final read waited for the open
	// transactions to end.
	aborts      []string
	killsInTxn  int
	stableAfter time.Duration
	// txnEnded: how long after its kill the broker ended each
	// transaction a kill left open (sorted); txnOpen: how many had not
	// ended when the scenario checked.
	txnEnded []time.Duration
	txnOpen  int
	rewinds  int // the in-place rewinds the processes logged (rewoundLog)

	// -sink postgres: the rows of the events table, and the claims of
	// partitions the offsets table counted (the sum of their epochs).
	postgres bool
	rows     int
	claims   int64

	violations []string
	notes      []string // WARN/ERROR counts of the processes' logs
	slow       []string // recoveries slower than the session timeout + 3s, with the group's history
	took       time.Duration
	logDir     string
}

func (r result) ok() bool { return len(r.violations) == 0 }

// errAbort stops the remaining steps of a scenario after a violation that
// leaves the group in an unknown state; the scenario still finishes (stops
// everything, checks what is there).
var errAbort = errors.New("scenario aborted")

func (s *scenario) name() string { return fmt.Sprintf("%s/%s/seed%d", s.client, s.protocol, s.seed) }

// logf prints a progress line, prefixed by the scenario and its clock.
func (s *scenario) logf(format string, args ...any) {
	fmt.Fprintf(s.out, "  %-40s %6.1fs  %s\n", s.name(), time.Since(s.began).Seconds(), fmt.Sprintf(format, args...))
}

// violate records a violation and prints it at once.
func (s *scenario) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.res.violations = append(s.res.violations, msg)
	s.logf("VIOLATION: %s", firstLine(msg))
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// run runs the scenario to the end, whatever happens, and returns its
// result. Every process it started is gone when it returns.
func (s *scenario) run(ctx context.Context) result {
	s.began = time.Now()
	s.res = result{client: s.client, protocol: s.protocol, seed: s.seed, steps: len(s.plan), logDir: s.logDir, exactlyOnce: s.set.exactlyOnce,
		postgres: s.set.sink == sinkPostgres}
	s.live, s.inc, s.windows = map[int]*proc{}, map[int]int{}, map[int32][]window{}
	s.txns = newKilledTxns()
	defer func() { s.res.took = time.Since(s.began) }()
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		s.violate("log directory: %v", err)
		return s.res
	}
	if s.set.sink == sinkPostgres {
		dsn, err := createDatabase(ctx, s.pg, databaseName(combo{s.client, s.protocol}, s.seed))
		if err != nil {
			s.violate("%v", err)
			return s.res
		}
		s.dsn = dsn
		defer s.keepPostgresLog()
	}
	t := time.Now()
	c, err := startCluster(ctx, s.set.broker, s.set.partitions, s.set.sessionTimeout)
	if err != nil {
		s.violate("starting the broker (%s): %v", s.set.broker, err)
		return s.res
	}
	s.c = c
	defer c.close()
	defer s.keepBrokerLog() // before the broker closes
	if s.set.broker == kafkatest.Apache {
		s.logf("Apache Kafka %s started in %v", kafkatest.ApacheKafkaVersion, time.Since(t).Round(100*time.Millisecond))
	}
	defer s.txns.wait(0) // before the broker closes
	s.mon = startMonitor(c)
	defer s.mon.close()
	defer s.sup.killAll()

	prod := &producer{c: c}
	if err := prod.produce(ctx, s.set.backlog); err != nil {
		s.violate("%v", err)
		return s.res
	}
	err = s.steps(ctx, prod)
	if err != nil && !errors.Is(err, errAbort) {
		s.violate("%v", err)
	}
	if ctx.Err() != nil {
		s.violate("interrupted (%v): processes killed, nothing checked", context.Cause(ctx))
		return s.res
	}
	s.finish(ctx)
	return s.res
}

// steps starts the group, checks it uses the protocol asked for, streams
// events and runs the plan.
func (s *scenario) steps(ctx context.Context, prod *producer) (err error) {
	t := time.Now()
	for slot := range s.set.procs {
		if err := s.start(slot); err != nil {
			return err
		}
	}
	if err := s.recovered(ctx, "start of all processes", t); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	got, err := s.c.protocolInUse(pctx)
	cancel()
	if err != nil || got != s.protocol {
		s.violate("the group uses protocol %q (%v), want %q", got, err, s.protocol)
		return errAbort
	}
	stop := prod.stream(s.set.rate)
	defer func() {
		n, perr := stop()
		s.res.events = n
		if perr != nil {
			s.violate("%v", perr)
		}
	}()
	for i, st := range s.plan {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(st.settle):
		}
		if err := s.unexpectedExits(); err != nil {
			return err
		}
		s.logf("step %d/%d: %v", i+1, len(s.plan), st)
		if err := s.do(ctx, st); err != nil {
			return err
		}
	}
	return s.unexpectedExits()
}

// finish waits for the group to commit everything produced, stops every
// process with SIGTERM, and checks the topics and the commits.
func (s *scenario) finish(ctx context.Context) {
	if len(s.live) > 0 {
		hw, err := s.c.highWatermarks(ctx, inputTopic)
		if err == nil {
			_, err = s.mon.waitUntil(ctx, time.Now().Add(s.set.recoveryTimeout), "every partition committed up to its high watermark",
				func(g groupState) (bool, string) { s.restartAborted(); return caughtUp(g, hw) })
		}
		if err != nil {
			s.violate("%v", err)
		} else {
			s.logf("caught up: every partition committed up to its high watermark")
		}
		s.terminate(s.liveProcs(), "final stop")
	}
	for _, p := range s.all {
		if s.set.exactlyOnce {
			s.res.rewinds += p.countLines(rewoundLog)
		}
		if lines, n := p.logProblems(3); n > 0 {
			for i, l := range lines {
				if len(l) > 300 {
					lines[i] = l[:300] + "..."
				}
			}
			s.res.notes = append(s.res.notes, fmt.Sprintf("%s logged %d WARN/ERROR lines, first: %s", p.name, n, strings.Join(lines, " | ")))
		}
	}
	if s.set.exactlyOnce {
		// A read_committed reader stops at the last stable offset: wait
		// for the transactions of the killed processes to be aborted.
		waited, err := s.c.waitStable(ctx, stableBound, outputTopic, deadTopic)
		s.res.stableAfter = waited
		if err != nil {
			s.violate("%v", err)
			return
		}
		s.logf("no transaction open any more on %s and %s after %v", outputTopic, deadTopic, waited.Round(time.Millisecond))
		s.res.txnEnded, s.res.txnOpen = s.txns.wait(stableBound)
		if s.res.txnOpen > 0 {
			s.violate("%d transactions left open by kills still ongoing %v after the last process stopped", s.res.txnOpen, stableBound)
		}
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	o, err := s.c.observe(octx, s.set.exactlyOnce)
	if err != nil {
		s.violate("reading the topics: %v", err)
		return
	}
	var positionsWrong, rowsWrong []string
	if s.set.sink == sinkPostgres {
		tab, err := readTable(octx, s.dsn)
		if err != nil {
			s.violate("reading the table: %v", err)
			return
		}
		o.output, o.rowsOnce = tab.outputs, true
		positionsWrong, s.res.claims = checkPositions(tab.positions, tab.outputs, o.high)
		s.res.rows, rowsWrong = len(tab.outputs), tab.wrong
	}
	s.res.v = check(o, s.windows)
	s.res.v.wrong = append(s.res.v.wrong, rowsWrong...)
	s.res.checked = true
	v := s.res.v
	outputs := "outputs"
	if s.set.sink == sinkPostgres {
		outputs = "rows"
	}
	s.logf("checked %d inputs (%d malformed), %d %s, %d dead letters: lost %d, not processed yet %d, duplicates %d (unexplained %d), wrong %d",
		v.inputs, v.malformed, v.outputs, outputs, v.deadLetters, len(v.lost), v.pending, v.duplicates, len(v.unexplained), len(v.wrong))
	report := func(what string, items []string) {
		if len(items) > 0 {
			s.violate("%d %s, e.g. %s", len(items), what, strings.Join(items[:min(5, len(items))], "; "))
		}
	}
	if len(v.lost) > 0 {
		s.violate("%d lost records (below the committed offset, never processed): %s, e.g. %s", len(v.lost), offsetRanges(v.lostAt),
			strings.Join(v.lost[:min(5, len(v.lost))], "; "))
	}
	if len(v.unexplained) > 0 {
		var lost []string
		for _, p := range s.all {
			for _, e := range p.lostEvents() {
				lost = append(lost, e.String())
			}
		}
		why := "no process logged a lost assignment"
		if len(lost) > 0 {
			why = "lost assignments logged: " + strings.Join(lost, ", ")
		}
		rule := "outside any kill window (graceful stops must not redo work)"
		if s.set.exactlyOnce {
			rule = "in the committed output (exactly once: none allowed, kills included)"
		}
		if s.set.sink == sinkPostgres {
			rule = "in the table (exactly once: none allowed, kills included)"
		}
		s.violate("%d duplicates %s: %s; %s; e.g. %s", len(v.unexplained), rule, offsetRanges(v.unexplainedAt), why,
			strings.Join(v.unexplained[:min(5, len(v.unexplained))], "; "))
	}
	report("wrong outputs or dead letters", v.wrong)
	report("positions in "+offsetsTable+" that disagree with the rows or the input", positionsWrong)
	report("partitions not committed up to their high watermark at the end", v.behind)
	report("results committed past their input's committed offset (a transaction committed outputs without their offsets)", v.ahead)
	if v.maxDupAge > dupAgeBound {
		s.violate("a kill redid work %v old (bound %v: two commit intervals of %v plus 1s)", v.maxDupAge.Round(time.Millisecond),
			dupAgeBound, demo.CommitInterval)
	}
}

// brokerLogLines is how much of Apache Kafka's log a failed scenario
// keeps: all of it, for a scenario's run.
const brokerLogLines = 1_000_000

// keepBrokerLog writes Apache Kafka's log (kafka.log, every node's
// server.log and stdout) into the scenario's log directory when the
// scenario failed, to be read with the processes' logs.
func (s *scenario) keepBrokerLog() {
	if s.res.ok() || s.set.broker != kafkatest.Apache {
		return
	}
	path := filepath.Join(s.logDir, "kafka.log")
	if err := os.WriteFile(path, []byte(s.c.b.LogTail(brokerLogLines)), 0o644); err != nil {
		s.logf("keeping the broker's log: %v", err)
		return
	}
	s.logf("Apache Kafka's log kept in %s", path)
}

// caughtUp reports whether every partition is committed up to hw.
func caughtUp(g groupState, hw map[int32]int64) (bool, string) {
	var behind []string
	for _, p := range slices.Sorted(maps.Keys(hw)) {
		if c := g.commits[p]; c != hw[p] {
			behind = append(behind, fmt.Sprintf("partition %d committed %d of %d", p, c, hw[p]))
		}
	}
	return len(behind) == 0, strings.Join(behind, ", ")
}

// liveProcs returns the running processes by slot.
func (s *scenario) liveProcs() []*proc {
	var ps []*proc
	for _, slot := range slices.Sorted(maps.Keys(s.live)) {
		ps = append(ps, s.live[slot])
	}
	return ps
}

// liveNames returns the client ids the group must consist of.
func (s *scenario) liveNames() []string {
	var names []string
	for _, p := range s.live {
		names = append(names, p.name)
	}
	slices.Sort(names)
	return names
}

// logDirFor is where one scenario's process logs go.
func logDirFor(root string, c combo, seed int64) string {
	return filepath.Join(root, fmt.Sprintf("%s-%s-seed%d", c.client, c.protocol, seed))
}
