package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(o.input, 8), kafkatest.WithTopic(o.output, 8), kafkatest.WithTopic(o.dlq, 1))
	var out bytes.Buffer
	if err := runDemo(context.Background(), o, b, slog.New(slog.DiscardHandler), &out); err != nil {
		t.Fatalf("runDemo: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("committed %d of %d", n, n)) {
		t.Fatalf("summary does not report everything committed:\n%s", out.String())
	}
	valid := 0
	for i := range n {
		if !demo.IsMalformedIndex(i) {
			valid++
		}
	}
	seen := readCommitted(t, b, o.output, valid)
	for i := range n {
		id := fmt.Sprintf("e-%d", i)
		if want := map[bool]int{false: 1, true: 0}[demo.IsMalformedIndex(i)]; seen[id] != want {
			t.Fatalf("event %s in the committed output %d times, want %d", id, seen[id], want)
		}
	}
	if dead := readCommitted(t, b, o.dlq, n-valid); len(dead) == 0 {
		t.Fatal("no committed dead letter")
	}
}

// readCommitted reads topic with isolation.level=read_committed until it
// got want records and returns how often each key came.
func readCommitted(t *testing.T, b *kafkatest.Broker, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen, got := map[string]int{}, 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d committed records of %s, want %d", got, topic, want)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)]++; got++ })
	}
	return seen
}
