package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// msgPerSec is a run's rate: the records of its layout over its window.
func (rn run) msgPerSec() float64 {
	if rn.res.WindowSec <= 0 {
		return 0
	}
	return float64(rn.l.records) / rn.res.WindowSec
}

// msgPerSecFromAssign is a run's rate from its first assignment.
func (rn run) msgPerSecFromAssign() float64 {
	if rn.res.AssignSec <= 0 {
		return 0
	}
	return float64(rn.l.records) / rn.res.AssignSec
}

// cpuPerRecord is the CPU time a run's process spent in all (start-up,
// prefetching before the window, shutdown and the final commit included)
// per record, in microseconds: clients that fetch ahead decode much of
// the topic before the first record reaches the loop, so the window's
// CPU alone would flatter them.
func (rn run) cpuPerRecord() float64 {
	return rn.res.CPUTotal * 1e6 / float64(rn.l.records)
}

// windowCPUPerRecord is the CPU time spent per record within the window,
// in microseconds.
func (rn run) windowCPUPerRecord() float64 {
	return rn.res.CPUSec * 1e6 / float64(rn.l.records)
}

func (rn run) rssMiB() float64 { return float64(rn.res.PeakRSSKiB) / 1024 }

// gcShare is the collector's share of the process's CPU time, in percent.
func (rn run) gcShare() float64 {
	if rn.res.CPUTotal <= 0 {
		return 0
	}
	return 100 * rn.res.GCCPUSec / rn.res.CPUTotal
}

// brokerCPUPerRecord is the broker's CPU time during the run (the run
// child's whole life) per record, in microseconds.
func (rn run) brokerCPUPerRecord() float64 {
	return rn.brokerCPU.Seconds() * 1e6 / float64(rn.l.records)
}

// dbCPUPerRecord is PostgreSQL's CPU time during the run (the run
// child's whole life) per record, in microseconds.
func (rn run) dbCPUPerRecord() float64 {
	return rn.dbCPU.Seconds() * 1e6 / float64(rn.l.records)
}

// brokerCores is the broker's CPU time during the run over the run's
// wall time: the cores it kept busy on average.
func (rn run) brokerCores() float64 {
	if rn.wall <= 0 {
		return 0
	}
	return rn.brokerCPU.Seconds() / rn.wall.Seconds()
}

// runLine is one run, as the run-by-run list shows it.
func runLine(rn run) string {
	verdict := "verified"
	if rn.err != nil {
		verdict = "FAILED: " + rn.err.Error()
	}
	extra := ""
	if rn.section == "slow" {
		extra = fmt.Sprintf(", %d calls at once at most, in flight %.1f MiB at most", rn.res.PeakCalls, float64(rn.res.PeakBytes)/(1<<20))
	}
	if isPG(rn.name) {
		extra = fmt.Sprintf(", PostgreSQL CPU %5.2f µs/record", rn.dbCPUPerRecord())
	}
	return fmt.Sprintf("run %d %-24s %3d partitions: %9.0f msg/s (%9.0f from assignment), window %6.3f s, CPU %5.2f µs/record (%5.2f in the window), peak RSS %6.1f MiB, GC %d cycles (%4.1f%% of CPU), broker CPU %5.2f µs/record (%.2f cores)%s, %s",
		rn.round+1, rn.name, rn.l.partitions, rn.msgPerSec(), rn.msgPerSecFromAssign(), rn.res.WindowSec, rn.cpuPerRecord(), rn.windowCPUPerRecord(), rn.rssMiB(), rn.res.GCCycles, rn.gcShare(), rn.brokerCPUPerRecord(), rn.brokerCores(), extra, verdict)
}

// median returns the median of xs (the mean of the middle two for an
// even count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// summary is one case's line of the table: medians over its runs.
type summary struct {
	name           string
	runs, verified int
	rate, cpu, rss float64
	brokerCPU      float64 // median broker CPU µs/record
	brokerCores    float64 // median broker cores
	dbCPU          float64 // median PostgreSQL CPU µs/record
	assignRate     float64 // median msg/s from the first assignment
	ratio          float64 // rate over its baseline's rate; 0 if no baseline ran
	assignRatio    float64 // the same, for the rates from assignment
	baseline       string
}

// summarize computes every case's medians, in report order. Runs that
// failed are left out of the medians (and counted in runs only).
func summarize(runs []run) []summary {
	by := map[string][]run{}
	for _, rn := range runs {
		by[rn.name] = append(by[rn.name], rn)
	}
	var out []summary
	rates, assignRates := map[string]float64{}, map[string]float64{}
	for _, name := range caseOrder {
		rs := by[name]
		if len(rs) == 0 {
			continue
		}
		s := summary{name: name, runs: len(rs), baseline: baseline(name)}
		var rate, assign, cpu, rss, bcpu, bcores, dbcpu []float64
		for _, rn := range rs {
			if rn.err != nil {
				continue
			}
			s.verified++
			rate = append(rate, rn.msgPerSec())
			assign = append(assign, rn.msgPerSecFromAssign())
			cpu = append(cpu, rn.cpuPerRecord())
			rss = append(rss, rn.rssMiB())
			bcpu = append(bcpu, rn.brokerCPUPerRecord())
			bcores = append(bcores, rn.brokerCores())
			dbcpu = append(dbcpu, rn.dbCPUPerRecord())
		}
		s.rate, s.assignRate, s.cpu, s.rss = median(rate), median(assign), median(cpu), median(rss)
		s.brokerCPU, s.brokerCores, s.dbCPU = median(bcpu), median(bcores), median(dbcpu)
		rates[name], assignRates[name] = s.rate, s.assignRate
		out = append(out, s)
	}
	for i := range out {
		if b := rates[out[i].baseline]; b > 0 {
			out[i].ratio = out[i].rate / b
		}
		if b := assignRates[out[i].baseline]; b > 0 {
			out[i].assignRatio = out[i].assignRate / b
		}
	}
	return out
}

// ratioText shows a ratio, n/a when its baseline did not run.
func ratioText(r float64) string {
	if r <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", r)
}

// brokerText names the broker of a report.
func brokerText(k kafkatest.Kind) string {
	if k == kafkatest.Apache {
		return fmt.Sprintf("Apache Kafka %s, one node in Java processes, JVM flags %s", kafkatest.ApacheKafkaVersion, strings.Join(apacheJVMFlags, " "))
	}
	return "kfake, franz-go's, in a child process"
}

// report writes the tables: the speed runs (medians, ratios), every run,
// the memory section and the slow section.
func report(w io.Writer, o options, speed, mem, slow []run) {
	fmt.Fprintf(w, "Broker: %s. Broker CPU is the broker process tree's user+sys CPU during each run child's life (start-up and shutdown included), per record and over that time (cores).\n\n", brokerText(o.broker))
	pgRuns := slices.DeleteFunc(slices.Clone(speed), func(rn run) bool { return !isPG(rn.name) })
	kafkaRuns := slices.DeleteFunc(slices.Clone(speed), func(rn run) bool { return isPG(rn.name) })
	if len(kafkaRuns) > 0 {
		fmt.Fprintf(w, "## Speed: %d records of %d B, %d partitions, %d run(s) per case, medians\n\n", o.records, o.value, o.partitions, o.runs)
		budget := "pipeline's default in-flight byte budget"
		if o.budget > 0 {
			budget = fmt.Sprintf("in-flight byte budget %d MiB", o.budget>>20)
		}
		fmt.Fprintf(w, "msg/s counts from the first record to the last one done (consume → produce: delivered); \"from assignment\" counts from the consumer's first assignment instead, so it includes the fetches a client made before handing over its first record; ratios are to the raw loop of the same client (for consume → produce, the raw consume → produce loop; for a -dlq case, every record invalid, the -valid case of its client, every record valid); CPU is user+sys of the run's whole process (start-up, prefetch and shutdown included) per record; peak RSS is its VmHWM; Sluice with %s.\n\n", budget)
		tableHead(w, "case", "msg/s", "ratio", "msg/s from assignment", "ratio", "CPU µs/record", "peak RSS MiB", "broker CPU µs/record", "broker cores", "verified")
		for _, s := range summarize(kafkaRuns) {
			summaryRow(w, s, "%.1f | %.2f | %.2f", s.rss, s.brokerCPU, s.brokerCores)
		}
		fmt.Fprintln(w)
	}
	if len(pgRuns) > 0 {
		fmt.Fprintf(w, "## PostgreSQL sink: %d records of %d B, %d partitions, a row each, batches of %d rows, %d run(s) per case, medians\n\n", o.records, o.value, o.partitions, batchSize, o.runs)
		fmt.Fprintln(w, "rows/s counts from the first record to the last row committed; \"from assignment\" from the consumer's first assignment; ratios are to the raw loop of the same client (raw-pg-<client>: one goroutine, one connection, COPY of any partitions' rows per transaction); CPU is the run's whole process per row; PostgreSQL CPU is the server's processes (backends that ended included) during the run child's life, per row; every run's table was read back: every record's row exactly once, with its value, and for -eos the positions stored at each partition's end.")
		fmt.Fprintln(w)
		tableHead(w, "case", "rows/s", "ratio", "rows/s from assignment", "ratio", "CPU µs/row", "PostgreSQL CPU µs/row", "peak RSS MiB", "broker CPU µs/row", "verified")
		for _, s := range summarize(pgRuns) {
			summaryRow(w, s, "%.2f | %.1f | %.2f", s.dbCPU, s.rss, s.brokerCPU)
		}
		fmt.Fprintln(w)
	}
	if len(speed) > 0 {
		fmt.Fprintln(w, "Runs, in the order they ran:")
		fmt.Fprintln(w)
		for _, rn := range speed {
			fmt.Fprintln(w, "    "+runLine(rn))
		}
	}
	if len(mem) > 0 {
		if len(speed) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "## Memory: graph (b), %d records of %d B, one run each\n\n", o.records, o.value)
		tableHead(w, "case", "partitions", "budget MiB", "peak RSS MiB", "RSS − budget MiB", "msg/s", "verified")
		for _, rn := range mem {
			b := float64(rn.budget) / (1 << 20)
			fmt.Fprintf(w, "| %s | %d | %.0f | %.1f | %.1f | %.0f | %s |\n", rn.name, rn.l.partitions, b, rn.rssMiB(), rn.rssMiB()-b, rn.msgPerSec(), verdictText(rn))
		}
		fmt.Fprintln(w, "\nPeak RSS is the run's VmHWM. Prefetched data outside the budget counts in it: librdkafka's queue (queued.max.messages.kbytes, which package source sizes from the budget: 1 MiB at budgets up to 256 MiB) and franz-go's buffered fetches.")
	}
	if len(slow) > 0 {
		if len(speed)+len(mem) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "## Slow stage: Pool(%d) of a %v call per record, %d records of %d B, one run each\n\n", slowWorkers, slowCall, o.records, o.value)
		tableHead(w, "case", "partitions", "calls at once: ideal", "most seen", "msg/s", "ideal msg/s", "of ideal", "in flight MiB, most", "budget MiB", "peak RSS MiB", "verified")
		for _, rn := range slow {
			ideal := slowIdeal(rn.l.partitions)
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f | %.0f | %.2f | %.1f | %.0f | %.1f | %s |\n",
				rn.name, rn.l.partitions, rn.l.partitions*slowWorkers, rn.res.PeakCalls, rn.msgPerSec(), ideal, rn.msgPerSec()/ideal,
				float64(rn.res.PeakBytes)/(1<<20), float64(rn.budget)/(1<<20), rn.rssMiB(), verdictText(rn))
		}
		fmt.Fprintf(w, "\nThe graph is built per partition, so every partition has its own Pool(%d): the ideal is every worker of every partition always calling, partitions × %d calls per %v (one partition's pool alone: %.0f msg/s). \"of ideal\" is the share of that the run reached; the most calls seen at once shows how many workers were busy together. A run fails its checks if more calls ran at once than the pools allow or the in-flight bytes (sluice.HookInFlight) exceeded the budget.\n",
			slowWorkers, slowWorkers, slowCall, slowIdeal(1))
	}
}

// summaryRow writes the row of s in a speed or PostgreSQL table: its
// case, rate and ratio, rate from assignment and ratio, and CPU per
// record, then the columns of that table (format of figures), then how
// many of its runs were verified.
func summaryRow(w io.Writer, s summary, format string, figures ...any) {
	args := append([]any{s.name, s.rate, ratioText(s.ratio), s.assignRate, ratioText(s.assignRatio), s.cpu}, figures...)
	fmt.Fprintf(w, "| %s | %.0f | %s | %.0f | %s | %.2f | "+format+" | %d/%d |\n", append(args, s.verified, s.runs)...)
}

// tableHead writes the head of a Markdown table of cols: the first
// column (the case) and the last (the verdict) left-aligned, the figures
// between right-aligned.
func tableHead(w io.Writer, cols ...string) {
	align := make([]string, len(cols))
	for i := range cols {
		align[i] = "---:"
	}
	align[0], align[len(cols)-1] = "---", "---"
	fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
	fmt.Fprintln(w, "| "+strings.Join(align, " | ")+" |")
}

// verdictText is a run's verdict in a section table.
func verdictText(rn run) string {
	if rn.err != nil {
		return "NO: " + strings.SplitN(rn.err.Error(), "\n", 2)[0]
	}
	return "yes"
}
