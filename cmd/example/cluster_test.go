package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestClusterModeDrainsAndCommitsOnSignal runs the --brokers mode against
// an embedded broker with every --client under every --group-protocol and
// cancels it (what SIGINT does) once everything was committed: it must
// return nil with the group's commits at the end, and the group must have
// used the protocol asked for.
func TestClusterModeDrainsAndCommitsOnSignal(t *testing.T) {
	eachClientAnd(t, groupProtocols, clusterModeDrainsAndCommits)
}

func clusterModeDrainsAndCommits(t *testing.T, client, protocol string) {
	const n = 800
	o := options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 2, messages: n, client: client,
		groupFlags: groupFlags{protocol: protocol, clientID: "example-test", drainTimeout: 5 * time.Second}}
	b := kafkatest.NewBroker(t, demoTopics(o)...)
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
	if got := protocolInUse(t, b, o.group); got != protocol {
		t.Errorf("the group uses %q, want %q", got, protocol)
	}
	if gi := b.Group(t, o.group); len(gi.Members) != 1 || gi.Members[0].ClientID != "example-test" {
		t.Errorf("group members %+v, want one with client id example-test", gi.Members)
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

// protocolInUse asks the broker how group assigns: "consumer" for a
// KIP-848 group, else the classic assignor the members agreed on.
func protocolInUse(t *testing.T, b *kafkatest.Broker, group string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lreq := kmsg.NewPtrListGroupsRequest()
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range lresp.Groups {
		if g.Group == group && g.GroupType == "consumer" {
			return "consumer"
		}
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{group}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Groups) != 1 {
		t.Fatalf("describe %q: %d groups", group, len(dresp.Groups))
	}
	return dresp.Groups[0].Protocol
}
