package main

import (
	"slices"
	"strings"
)

// caseOrder lists every case, in the order of the report: the raw loop of
// each client first, then Sluice on it, consuming only (the dead-letter
// pair last), then consume → produce (k2k), then consume → PostgreSQL
// (pg; see pg.go), which the report shows in a table of their own.
var caseOrder = []string{
	"raw-confluent", "raw-confluent-default-queue", "raw-confluent-handoff", "sluice-confluent-each", "sluice-confluent-graph",
	"sluice-confluent-valid", "sluice-confluent-dlq",
	"raw-franz", "raw-franz-handoff", "sluice-franz-each", "sluice-franz-graph",
	"sluice-franz-valid", "sluice-franz-dlq",
	"k2k-raw-confluent", "k2k-sluice-confluent",
	"k2k-raw-franz", "k2k-sluice-franz",
	"raw-pg-confluent", "sluice-pg-confluent-alo", "sluice-pg-confluent-eos",
	"raw-pg-franz", "sluice-pg-franz-alo", "sluice-pg-franz-eos",
}

// cases maps a case name to its runner.
var cases = map[string]caseFunc{
	"raw-confluent":               rawConfluent,
	"raw-confluent-default-queue": rawConfluentDefaultQueue,
	"raw-confluent-handoff":       rawConfluentHandoff,
	"sluice-confluent-each":       sluiceEach(confluentSource),
	"sluice-confluent-graph":      sluiceGraph(confluentSource),
	"sluice-confluent-valid":      sluiceDeadLetters(confluentSource, newSinkProducer, false),
	"sluice-confluent-dlq":        sluiceDeadLetters(confluentSource, newSinkProducer, true),
	"raw-franz":                   rawFranz,
	"raw-franz-handoff":           rawFranzHandoff,
	"sluice-franz-each":           sluiceEach(franzSource),
	"sluice-franz-graph":          sluiceGraph(franzSource),
	"sluice-franz-valid":          sluiceDeadLetters(franzSource, newFranzProducer, false),
	"sluice-franz-dlq":            sluiceDeadLetters(franzSource, newFranzProducer, true),
	"k2k-raw-confluent":           k2kRawConfluent,
	"k2k-sluice-confluent":        k2kSluice(confluentSource, newSinkProducer),
	"k2k-raw-franz":               k2kRawFranz,
	"k2k-sluice-franz":            k2kSluice(franzSource, newFranzProducer),
	"raw-pg-confluent":            rawPGConfluent,
	"sluice-pg-confluent-alo":     sluicePG(confluentSource, false),
	"sluice-pg-confluent-eos":     sluicePG(confluentSource, true),
	"raw-pg-franz":                rawPGFranz,
	"sluice-pg-franz-alo":         sluicePG(franzSource, false),
	"sluice-pg-franz-eos":         sluicePG(franzSource, true),

	"sluice-confluent-slow64": sluiceSlow(confluentSource),
	"sluice-franz-slow64":     sluiceSlow(franzSource),
}

// caseNames lists every case a run child knows: the speed cases, then
// the slow section's.
func caseNames() []string { return append(slices.Clone(caseOrder), slowCases...) }

// baseline returns the case a case is compared with: for a dead-letter
// case (every record invalid) the same graph with every record valid;
// otherwise the raw loop of the same client, consuming only, consume →
// produce or consume → PostgreSQL like the case.
func baseline(name string) string {
	if base, ok := strings.CutSuffix(name, "-dlq"); ok {
		return base + "-valid"
	}
	client := "confluent"
	if strings.Contains(name, "franz") {
		client = "franz"
	}
	if strings.HasPrefix(name, "k2k-") {
		return "k2k-raw-" + client
	}
	if isPG(name) {
		return "raw-pg-" + client
	}
	return "raw-" + client
}

// isPG reports whether a case writes to PostgreSQL.
func isPG(name string) bool { return strings.Contains(name, "-pg-") }

// isExactlyOnce reports whether a case stores its positions in
// PostgreSQL (the sink's exactly-once mode).
func isExactlyOnce(name string) bool { return isPG(name) && strings.HasSuffix(name, "-eos") }

// isK2K reports whether a case is consume → produce.
func isK2K(name string) bool { return strings.HasPrefix(name, "k2k-") }

// isDeadLetter reports whether a case runs with the dead-letter
// destination (on its output topic).
func isDeadLetter(name string) bool {
	return strings.HasSuffix(name, "-dlq") || strings.HasSuffix(name, "-valid")
}

// hasOutput reports whether a case writes to an output topic, which must
// then hold every input record exactly once (none for the -valid cases).
func hasOutput(name string) bool { return isK2K(name) || isDeadLetter(name) }

// outputHoldsInput reports whether a case's output topic must hold every
// input record exactly once.
func outputHoldsInput(name string) bool { return isK2K(name) || strings.HasSuffix(name, "-dlq") }
