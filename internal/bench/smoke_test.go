package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the command end to end on a tiny workload on kfake,
// memory and slow sections included: the broker and every run are child
// processes (this test binary, see TestMain), and every run must pass its
// checks. With 8 partitions the memory section's 8-partition runs consume
// the speed runs' topic (in groups of their own).
func TestSmoke(t *testing.T) {
	o := options{
		records: 20_000, partitions: 8, value: 100, runs: 1, timeout: time.Minute,
		cases: []string{"raw-franz", "sluice-confluent-graph", "k2k-sluice-confluent", "sluice-franz-valid", "sluice-franz-dlq"},
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
		"| sluice-franz-valid | ",
		"| sluice-franz-dlq | ",
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
	if got := strings.Count(report, "-graph | "); got != 1+len(memoryPartitions)*2 {
		t.Errorf("the report has %d graph rows, want 1 speed row and %d memory rows:\n%s", got, len(memoryPartitions)*2, report)
	}
	for _, want := range []string{"| sluice-confluent-slow64 | 64 | 2048 | ", "| sluice-franz-slow64 | 64 | 2048 | "} {
		i := strings.Index(report, want)
		if i < 0 {
			t.Fatalf("the report has no slow row %q:\n%s", want, report)
		}
		row, _, _ := strings.Cut(report[i:], "\n")
		if !strings.HasSuffix(row, "| yes |") {
			t.Errorf("row %q: want its run verified", row)
		}
	}
	if strings.Contains(report, "FAILED") || strings.Contains(report, "| NO: ") {
		t.Errorf("a run failed:\n%s", report)
	}
}
