package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// run is one measured run and what its checks found.
type run struct {
	name      string
	section   string // speed, memory or slow
	round     int
	l         layout
	budget    int64
	res       Result
	wall      time.Duration // the run child's whole life
	brokerCPU time.Duration // the broker's CPU time during wall; 0 if unknown
	dbCPU     time.Duration // PostgreSQL's CPU time during wall (PostgreSQL cases); 0 if unknown
	err       error         // the run failed, or a check did
}

// bench runs the benchmark o describes and writes its report to w. It
// returns an error if a run failed or a check did not pass (after the
// report).
func bench(ctx context.Context, o options, w io.Writer) error {
	began := time.Now()
	if o.broker == "" {
		o.broker = kafkatest.Kfake // as -broker's default
	}
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return err
	}
	for _, d := range []string{o.cpuprofile, o.memprofile, o.trace} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var pg *pgServer
	if o.runSpeed() && slices.ContainsFunc(o.cases, isPG) {
		if pg, err = startPostgres(ctx); err != nil {
			return err
		}
		defer func() {
			if err := pg.close(); err != nil {
				fmt.Fprintln(w, "bench: stop PostgreSQL:", err)
			}
		}()
		fmt.Fprintf(w, "bench: PostgreSQL %s at %s (internal/pgtest's settings), database %s\n", pg.version(ctx), pg.srv.Addr(), pgDatabase)
	}
	byParts, topics := planTopics(o)
	fmt.Fprintf(w, "bench: starting the broker (%s) and filling %d topic(s) with %d records of %d B; logs in %s\n", brokerText(o.broker), len(topics), o.records, o.value, dir)
	b, err := startBroker(ctx, dir, o.broker, o.records, o.value, topics)
	if err != nil {
		return err
	}
	defer b.stop()
	adm, err := newAdmin(b.addr)
	if err != nil {
		return err
	}
	defer adm.close()
	fmt.Fprintf(w, "bench: broker ready at %s after %v\n", b.addr, time.Since(began).Round(100*time.Millisecond))

	r := &runner{o: o, dir: dir, adm: adm, addr: b.addr, brokerPID: b.cmd.Process.Pid, pg: pg, w: w, hashes: map[string][]uint64{}}
	var speedRuns, memRuns, slowRuns []run
	if o.runSpeed() {
		for round := range o.runs {
			order := slices.Clone(o.cases)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, name := range order {
				if ctx.Err() == nil {
					speedRuns = append(speedRuns, r.measure(ctx, "speed", name, round, byParts[o.partitions], o.budget))
				}
			}
		}
	}
	budget := o.budget
	if budget == 0 {
		budget = defaultMemoryBudget
	}
	if o.runMemory() {
		for _, n := range memoryPartitions {
			for _, name := range []string{"sluice-confluent-graph", "sluice-franz-graph"} {
				if ctx.Err() == nil {
					memRuns = append(memRuns, r.measure(ctx, "memory", name, 0, byParts[n], budget))
				}
			}
		}
	}
	if o.runSlow() {
		for _, name := range slowCases {
			if ctx.Err() == nil {
				slowRuns = append(slowRuns, r.measure(ctx, "slow", name, 0, byParts[slowPartitions], budget))
			}
		}
	}
	fmt.Fprintln(w)
	report(w, o, speedRuns, memRuns, slowRuns)
	fmt.Fprintf(w, "\nbench: took %v\n", time.Since(began).Round(time.Second))
	var errs []error
	for _, rn := range slices.Concat(speedRuns, memRuns, slowRuns) {
		if rn.err != nil {
			errs = append(errs, fmt.Errorf("%s run %d (%d partitions): %w", rn.name, rn.round+1, rn.l.partitions, rn.err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("stopped: %w", err))
	}
	if len(errs) == 0 {
		os.RemoveAll(dir)
	}
	return errors.Join(errs...)
}

// planTopics returns the input topics the sections of o read, by
// partition count and in creation order: the speed runs' ("in"), and
// "in-<n>" for the other sections' counts; a section whose count is the
// speed runs' reads their topic (in groups of its own).
func planTopics(o options) (map[int]topicSpec, []topicSpec) {
	byParts := map[int]topicSpec{}
	var topics []topicSpec
	add := func(n int) {
		if _, ok := byParts[n]; ok {
			return
		}
		name := fmt.Sprintf("in-%d", n)
		if len(topics) == 0 && o.runSpeed() {
			name = inputTopic
		}
		t := topicSpec{name: name, l: layout{records: o.records, partitions: n, valueSize: o.value}}
		byParts[n] = t
		topics = append(topics, t)
	}
	if o.runSpeed() {
		add(o.partitions)
	}
	if o.runMemory() {
		for _, n := range memoryPartitions {
			add(n)
		}
	}
	if o.runSlow() {
		add(slowPartitions)
	}
	return byParts, topics
}

// runner runs and checks single runs.
type runner struct {
	o         options
	dir       string
	adm       *admin
	addr      string
	brokerPID int       // the broker child: its process tree's CPU is the broker's
	pg        *pgServer // the PostgreSQL cases' server; nil when none runs
	w         io.Writer
	hashes    map[string][]uint64 // expected value hash sums, by topic
}

// measure runs case name once on topic t and checks it. Its group and
// output topic are named after section, name, partitions and round, so
// that every run starts from a group of its own.
func (r *runner) measure(ctx context.Context, section, name string, round int, t topicSpec, budget int64) run {
	rn := run{name: name, section: section, round: round, l: t.l, budget: budget}
	tag := fmt.Sprintf("%s-%s-p%d-%d", section, name, t.l.partitions, round+1)
	group := "bench-" + tag
	args := []string{"-case", name, "-brokers", r.addr, "-group", group, "-topic", t.name,
		"-records", fmt.Sprint(t.l.records), "-partitions", fmt.Sprint(t.l.partitions), "-value", fmt.Sprint(t.l.valueSize),
		"-budget", fmt.Sprint(budget)}
	var out string
	if hasOutput(name) {
		out = "out-" + tag
		if err := r.adm.createTopic(ctx, out, t.l.partitions); err != nil {
			rn.err = err
			return r.print(rn)
		}
		defer func() {
			if err := r.adm.deleteTopic(context.WithoutCancel(ctx), out); err != nil {
				fmt.Fprintln(r.w, "bench:", err)
			}
		}()
		args = append(args, "-out", out)
	}
	if isPG(name) {
		if r.pg == nil {
			rn.err = errors.New("no PostgreSQL server")
			return r.print(rn)
		}
		if err := r.pg.reset(ctx); err != nil {
			rn.err = err
			return r.print(rn)
		}
		args = append(args, "-pg", r.pg.dsn)
	}
	if r.o.cpuprofile != "" {
		args = append(args, "-cpuprofile", filepath.Join(r.o.cpuprofile, tag+".pprof"))
	}
	if r.o.memprofile != "" {
		args = append(args, "-memprofile", filepath.Join(r.o.memprofile, tag+".heap"))
	}
	if r.o.trace != "" {
		args = append(args, "-trace", filepath.Join(r.o.trace, tag+".trace"))
	}
	cpu0, cpuErr := procTreeCPU(r.brokerPID)
	db0, dbErr := r.dbCPU()
	began := time.Now()
	rn.res, rn.err = runProc(ctx, r.o.timeout, filepath.Join(r.dir, tag+".log"), args)
	rn.wall = time.Since(began)
	if cpu1, err := procTreeCPU(r.brokerPID); err == nil && cpuErr == nil {
		rn.brokerCPU = cpu1 - cpu0
	}
	if db1, err := r.dbCPU(); err == nil && dbErr == nil {
		rn.dbCPU = db1 - db0
	}
	if rn.err == nil {
		rn.err = r.check(ctx, rn, t, group, out)
	}
	if rn.err == nil && section == "slow" {
		rn.err = checkSlow(rn)
	}
	return r.print(rn)
}

// dbCPU is the PostgreSQL server's CPU time so far; 0 when none runs.
func (r *runner) dbCPU() (time.Duration, error) {
	if r.pg == nil {
		return 0, nil
	}
	return r.pg.cpu()
}

// check verifies a finished run: what it consumed, the group's commits
// and its output: for consume → produce and the -dlq cases every input
// record exactly once in the output topic, for the -valid cases nothing
// there; for the PostgreSQL cases every input record's row exactly once
// in the table, and for exactly-once the positions stored with them.
func (r *runner) check(ctx context.Context, rn run, t topicSpec, group, out string) error {
	want, ok := r.hashes[t.name]
	if !ok {
		want = t.l.expectedHashes()
		r.hashes[t.name] = want
	}
	if err := checkStats(t.l, want, rn.res.Parts); err != nil {
		return fmt.Errorf("consumed: %w", err)
	}
	committed, err := r.adm.committed(ctx, group, t.name)
	if err != nil {
		return err
	}
	end, err := r.adm.endOffsets(ctx, t.name)
	if err != nil {
		return err
	}
	if err := checkCommitted(t.l, committed, end); err != nil {
		return fmt.Errorf("commits: %w", err)
	}
	if isPG(rn.name) {
		if err := r.pg.checkTable(ctx, t.l, want); err != nil {
			return err
		}
		if isExactlyOnce(rn.name) {
			return r.pg.checkPositions(ctx, t.l, group, t.name)
		}
		return nil
	}
	if out == "" {
		return nil
	}
	if !outputHoldsInput(rn.name) {
		ends, err := r.adm.endOffsets(ctx, out)
		if err != nil {
			return err
		}
		for p, e := range ends {
			if e != 0 {
				return fmt.Errorf("output topic %s: partition %d holds %d records, want none", out, p, e)
			}
		}
		return nil
	}
	got, err := r.adm.readOutput(ctx, out, t.l)
	if err != nil {
		return err
	}
	if err := checkStats(t.l, want, got); err != nil {
		return fmt.Errorf("output topic %s: %w", out, err)
	}
	return nil
}

// print writes one line per run as it ends, and returns rn.
func (r *runner) print(rn run) run {
	fmt.Fprintln(r.w, "  "+runLine(rn))
	return rn
}
