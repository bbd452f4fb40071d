package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/testkit"
)

// TestClusterModeDrainsAndCommitsOnSignal runs the --brokers mode against
// an embedded broker and cancels it (what SIGINT does) once everything was
// committed: it must return nil with the group's commits at the end.
func TestClusterModeDrainsAndCommitsOnSignal(t *testing.T) {
	const n = 800
	o := options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 2, messages: n}
	b := testkit.NewBroker(t, testkit.WithTopic(o.input, 8), testkit.WithTopic(o.output, 8), testkit.WithTopic(o.dlq, 1))
	if err := produceWorkload(context.Background(), b, o.input, 8, n); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- runCluster(ctx, o, b.Addrs(), slog.New(slog.DiscardHandler), &out) }()

	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for sumCommitted(b, o.group, o.input) < n {
		select {
		case err := <-done:
			t.Fatalf("runCluster returned early: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("committed %d of %d after a minute", sumCommitted(b, o.group, o.input), n)
		case <-tick.C:
		}
	}
	cancel() // SIGINT
	if err := <-done; err != nil {
		t.Fatalf("runCluster returned %v after the signal, want nil", err)
	}
	if !strings.Contains(out.String(), "stopped: consumed") {
		t.Fatalf("no final line:\n%s", out.String())
	}
	hw := b.HighWatermarks(t, o.input)
	for p, c := range b.Committed(t, o.group, o.input) {
		if c != hw[p] {
			t.Fatalf("partition %d committed %d, high watermark %d", p, c, hw[p])
		}
	}
}
