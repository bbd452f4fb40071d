package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the command end to end on a tiny workload: the broker
// and every run are child processes (this test binary, see TestMain), and
// every run must pass its checks.
func TestSmoke(t *testing.T) {
	o := options{
		records: 20_000, partitions: 4, value: 100, runs: 1, noMemory: true, timeout: time.Minute,
		cases: []string{"raw-franz", "sluice-confluent-graph", "k2k-sluice-confluent"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := bench(ctx, o, &out); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []string{
		"| raw-franz | ",
		"| sluice-confluent-graph | ",
		"| k2k-sluice-confluent | ",
	} {
		i := strings.Index(report, want)
		if i < 0 {
			t.Fatalf("the report has no row %q:\n%s", want, report)
		}
		row, _, _ := strings.Cut(report[i:], "\n")
		if !strings.HasSuffix(row, "| 1/1 |") {
			t.Errorf("row %q: want its one run verified", row)
		}
	}
	if strings.Contains(report, "FAILED") {
		t.Errorf("a run failed:\n%s", report)
	}
}
