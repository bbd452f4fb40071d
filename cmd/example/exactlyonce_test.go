package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestDemoExactlyOnce runs the embedded demo with --exactly-once: every
// input commits, and a read_committed reader of the output sees one
// record per valid event, each once.
func TestDemoExactlyOnce(t *testing.T) {
	eachClient(t, demoExactlyOnce)
}

func demoExactlyOnce(t *testing.T, client string) {
	const n = 3000
	o := options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 4, messages: n,
		client: client, exactlyOnce: true}
	o.clientID = "eos-test"
	b := kafkatest.NewBroker(t, demoTopics(o)...)
	out := runDemoOn(t, o, b)
	if !strings.Contains(out, fmt.Sprintf("committed %d of %d", n, n)) {
		t.Fatalf("summary does not report everything committed:\n%s", out)
	}
	valid := 0
	for i := range n {
		if !demo.IsMalformedIndex(i) {
			valid++
		}
	}
	seen := map[string]int{}
	for _, r := range b.ReadCommitted(t, o.output) {
		seen[string(r.Key)]++
	}
	for i := range n {
		id := fmt.Sprintf("e-%d", i)
		if want := map[bool]int{false: 1, true: 0}[demo.IsMalformedIndex(i)]; seen[id] != want {
			t.Fatalf("event %s in the committed output %d times, want %d", id, seen[id], want)
		}
	}
	if dead := b.ReadCommitted(t, o.dlq); len(dead) == 0 || len(dead) < n-valid {
		t.Fatalf("%d committed dead letters, want at least one per malformed event (%d)", len(dead), n-valid)
	}
}
