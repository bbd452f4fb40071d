package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printSummary prints one row per scenario, then the violations and notes
// of every scenario that failed. It reports whether any failed.
func printSummary(w io.Writer, results []result, took time.Duration) (failed bool) {
	fmt.Fprintf(w, "\nchaos: %d scenarios in %v\n", len(results), took.Round(100*time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "client\tprotocol\tseed\tsteps\trestarts\tkills\tstop-all\taborted\tevents\tlost\tduplicates\tslowest shutdown\tslowest recovery\tresult")
	for _, r := range results {
		lost, dups := "-", "-"
		if r.checked {
			lost = fmt.Sprint(len(r.v.lost))
			dups = fmt.Sprint(r.v.duplicates)
			if n := len(r.v.unexplained); n > 0 {
				dups += fmt.Sprintf(" (%d unexplained)", n)
			} else if r.postgres && r.v.duplicates > 0 {
				dups += " (dead letters)"
			} else if r.v.duplicates > 0 {
				dups += fmt.Sprintf(" (<= %v old)", r.v.maxDupAge.Round(time.Millisecond))
			}
		}
		verdict := "ok"
		if !r.ok() {
			verdict = fmt.Sprintf("FAIL (%d)", len(r.violations))
			failed = true
		}
		aborted := "-"
		if r.exactlyOnce {
			aborted = fmt.Sprint(len(r.aborts))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.client, r.protocol, r.seed, r.steps, r.restarts, r.kills, r.stopAlls,
			aborted, r.events, lost, dups, durationWho(r.slowestShutdown, r.slowestShutdownWho), durationWho(r.slowestRecovery, r.slowestRecoveryWhy), verdict)
	}
	tw.Flush()
	for _, r := range results {
		if !r.exactlyOnce {
			continue
		}
		ended := ""
		if n := len(r.txnEnded); n > 0 {
			ended = fmt.Sprintf(" (the broker ended them %v to %v after the kill)", r.txnEnded[0].Round(10*time.Millisecond),
				r.txnEnded[n-1].Round(10*time.Millisecond))
		}
		fmt.Fprintf(w, "\n%s/%s/seed%d exactly once: %d of %d SIGKILLs left a transaction open%s; the final read_committed read waited %v for open transactions to end; %d aborts rewound in place; %d restarts after exactlyonce.ErrAborted\n",
			r.client, r.protocol, r.seed, r.killsInTxn, r.kills, ended, r.stableAfter.Round(10*time.Millisecond), r.rewinds, len(r.aborts))
		for _, a := range r.aborts {
			fmt.Fprintf(w, "  aborted: %s\n", a)
		}
	}
	for _, r := range results {
		if !r.postgres || !r.checked {
			continue
		}
		fmt.Fprintf(w, "\n%s/%s/seed%d postgres: %d rows for %d valid events; %d partition claims in %s; %d dead letters for %d malformed events (extra copies: %d, outside every kill window: %d)\n",
			r.client, r.protocol, r.seed, r.rows, r.v.valid, r.claims, offsetsTable, r.v.deadLetters, r.v.malformed, r.v.deadDuplicates, len(r.v.deadOutside))
		for _, d := range r.v.deadOutside[:min(5, len(r.v.deadOutside))] {
			fmt.Fprintf(w, "  dead letter again: %s\n", d)
		}
	}
	for _, r := range results {
		for _, n := range r.slow {
			fmt.Fprintf(w, "\n%s/%s/seed%d %s\n", r.client, r.protocol, r.seed, strings.ReplaceAll(n, "\n", "\n    "))
		}
	}
	for _, r := range results {
		if r.ok() {
			continue
		}
		fmt.Fprintf(w, "\n%s/%s/seed%d FAILED (logs in %s):\n", r.client, r.protocol, r.seed, r.logDir)
		for _, v := range r.violations {
			fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(v, "\n", "\n    "))
		}
		for _, n := range r.notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	return failed
}

func durationWho(d time.Duration, who string) string {
	if who == "" {
		return "-"
	}
	return fmt.Sprintf("%v (%s)", d.Round(10*time.Millisecond), who)
}
