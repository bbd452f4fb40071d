package main

import (
	"strings"
	"testing"
)

// The ends of a report row whose run passed its checks.
const (
	oneRunVerified     = "| 1/1 |" // a speed or PostgreSQL row: 1 of 1 runs verified
	sectionRunVerified = "| yes |" // a memory or slow-stage row
)

// caseRows returns the starts of the report rows of cases: "| name | ".
func caseRows(cases []string) []string {
	rows := make([]string, len(cases))
	for i, c := range cases {
		rows[i] = "| " + c + " | "
	}
	return rows
}

// checkRowsEnd checks that report has a row starting with each of starts,
// and that the first such row ends with end.
func checkRowsEnd(t *testing.T, report, end string, starts ...string) {
	t.Helper()
	for _, start := range starts {
		i := strings.Index(report, start)
		if i < 0 {
			t.Fatalf("the report has no row %q:\n%s", start, report)
		}
		if row, _, _ := strings.Cut(report[i:], "\n"); !strings.HasSuffix(row, end) {
			t.Errorf("row %q: want it to end %q (its run verified)", row, end)
		}
	}
}
