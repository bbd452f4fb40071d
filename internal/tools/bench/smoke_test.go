package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/internal/pgtest"
)

// TestSmoke runs the command end to end on a tiny workload on kfake,
// memory and slow sections included: the broker and every run are child
// processes (this test binary, see TestMain), and every run must pass its
// checks. With 8 partitions the memory section's 8-partition runs consume
// the speed runs' topic (in groups of their own).
func TestSmoke(t *testing.T) {
	o := options{
		records: 20_000, partitions: 8, value: 100, runs: 1, timeout: time.Minute,
		cases: []string{"raw-franz", "raw-confluent-handoff", "raw-franz-handoff", "sluice-confluent-graph", "k2k-sluice-confluent", "sluice-franz-valid", "sluice-franz-dlq"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := bench(ctx, o, &out); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	report := out.String()
	checkRowsEnd(t, report, oneRunVerified,
		"| raw-franz | ", "| raw-confluent-handoff | ", "| raw-franz-handoff | ", "| sluice-confluent-graph | ", "| k2k-sluice-confluent | ", "| sluice-franz-valid | ", "| sluice-franz-dlq | ")
	if got := strings.Count(report, "-graph | "); got != 1+len(memoryPartitions)*2 {
		t.Errorf("the report has %d graph rows, want 1 speed row and %d memory rows:\n%s", got, len(memoryPartitions)*2, report)
	}
	checkRowsEnd(t, report, sectionRunVerified, "| sluice-confluent-slow64 | 64 | 2048 | ", "| sluice-franz-slow64 | 64 | 2048 | ")
	if strings.Contains(report, "FAILED") || strings.Contains(report, "| NO: ") {
		t.Errorf("a run failed:\n%s", report)
	}
}

// TestSmokePostgres runs the PostgreSQL cases end to end on a tiny
// workload on kfake, with the benchmark's own PostgreSQL server: every
// run must pass its checks, the table read back included (every record's
// row once, and for -eos the positions at the partitions' ends). It
// skips without PostgreSQL unless SLUICE_REQUIRE_POSTGRES is set.
func TestSmokePostgres(t *testing.T) {
	pgCases := []string{
		"raw-pg-confluent", "sluice-pg-confluent-alo", "sluice-pg-confluent-eos",
		"raw-pg-franz", "sluice-pg-franz-alo", "sluice-pg-franz-eos",
	}
	o := options{
		records: 20_000, partitions: 8, value: 100, runs: 1, timeout: time.Minute,
		noMemory: true, noSlow: true, cases: pgCases,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := bench(ctx, o, &out)
	if errors.Is(err, pgtest.ErrNotInstalled) && os.Getenv(pgtest.RequireEnv) == "" {
		t.Skipf("%v (set %s=1 to fail instead)", err, pgtest.RequireEnv)
	}
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	report := out.String()
	if !strings.Contains(report, "## PostgreSQL sink: ") {
		t.Fatalf("the report has no PostgreSQL section:\n%s", report)
	}
	if strings.Contains(report, "## Speed: ") {
		t.Errorf("the report has a Kafka speed table without a Kafka case:\n%s", report)
	}
	checkRowsEnd(t, report, oneRunVerified, caseRows(pgCases)...)
	for _, c := range pgCases {
		if base := baseline(c); !strings.HasPrefix(base, "raw-pg-") || !strings.Contains(c, strings.TrimPrefix(base, "raw-pg-")) {
			t.Errorf("%s is compared with %s, want the raw PostgreSQL loop of its client", c, base)
		}
	}
	if strings.Contains(report, "FAILED") {
		t.Errorf("a run failed:\n%s", report)
	}
}
