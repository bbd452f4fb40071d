package main

import (
	"slices"
	"strings"
)

// caseOrder lists every case, in the order of the report: the raw loop of
// each client first, then Sluice on it, consuming only, then consume →
// produce (k2k).
var caseOrder = []string{
	"raw-confluent", "sluice-confluent-each", "sluice-confluent-graph",
	"raw-franz", "sluice-franz-each", "sluice-franz-graph",
	"k2k-raw-confluent", "k2k-sluice-confluent",
	"k2k-raw-franz", "k2k-sluice-franz",
}

// cases maps a case name to its runner.
var cases = map[string]caseFunc{
	"raw-confluent":          rawConfluent,
	"sluice-confluent-each":  sluiceEach(confluentSource),
	"sluice-confluent-graph": sluiceGraph(confluentSource),
	"raw-franz":              rawFranz,
	"sluice-franz-each":      sluiceEach(franzSource),
	"sluice-franz-graph":     sluiceGraph(franzSource),
	"k2k-raw-confluent":      k2kRawConfluent,
	"k2k-sluice-confluent":   k2kSluiceConfluent,
	"k2k-raw-franz":          k2kRawFranz,
	"k2k-sluice-franz":       k2kSluiceFranz,

	"sluice-confluent-slow64": sluiceSlow(confluentSource),
	"sluice-franz-slow64":     sluiceSlow(franzSource),
}

// caseNames lists every case a run child knows: the speed cases, then
// the slow section's.
func caseNames() []string { return append(slices.Clone(caseOrder), slowCases...) }

// baseline returns the raw loop a case is compared with: the raw loop of
// the same client, consuming only or consume → produce like the case.
func baseline(name string) string {
	client := "confluent"
	if strings.Contains(name, "franz") {
		client = "franz"
	}
	if strings.HasPrefix(name, "k2k-") {
		return "k2k-raw-" + client
	}
	return "raw-" + client
}

// isK2K reports whether a case produces to an output topic.
func isK2K(name string) bool { return strings.HasPrefix(name, "k2k-") }
