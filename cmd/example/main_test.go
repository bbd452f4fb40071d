package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgServer.StopAfter(kafkatest.Pooled(m))) }

// TestDemoEndToEnd runs the demo against an embedded broker with each
// --client and checks the output and dead-letter topics record by record.
func TestDemoEndToEnd(t *testing.T) {
	eachClient(t, demoEndToEnd)
}

func demoEndToEnd(t *testing.T, client string) {
	const n = 3000
	o := options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 4, messages: n, client: client}
	b := kafkatest.NewKfake(t, demoTopics(o)...)
	software := clientSoftware(b)
	out := runDemoOn(t, o, b)
	// The workload and the checks below connect with kgo; the consumer
	// and the producer with the client asked for, and only with it.
	switch got := software(); {
	case client == "librdkafka" && !got["confluent-kafka-go"]:
		t.Errorf("--client librdkafka: clients connected %v, want confluent-kafka-go among them", got)
	case client == "franz" && (got["confluent-kafka-go"] || !got["kgo"]):
		t.Errorf("--client franz: clients connected %v, want kgo only", got)
	}
	if !strings.Contains(out, fmt.Sprintf("committed %d of %d", n, n)) {
		t.Fatalf("summary does not report everything committed:\n%s", out)
	}
	for p, c := range b.Committed(t, o.group, o.input) {
		if hw := b.HighWatermarks(t, o.input)[p]; c != hw {
			t.Fatalf("partition %d committed %d, high watermark %d", p, c, hw)
		}
	}

	// Which input went where: the workload is deterministic.
	valid := map[string]string{} // id -> source
	wantDead := 0
	for i := range n {
		if demo.IsMalformedIndex(i) {
			wantDead++
			continue
		}
		valid[fmt.Sprintf("e-%d", i)] = ""
	}
	seen := map[string]bool{}
	output := b.ReadAll(t, o.output)
	if len(output) != len(valid) {
		t.Fatalf("%d output records, want %d (one per valid event, no rebalance so no duplicate)", len(output), len(valid))
	}
	for _, r := range output {
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("output %s is not JSON: %v", r.Value, err)
		}
		id := string(r.Key)
		if _, ok := valid[id]; !ok || v["id"] != id {
			t.Fatalf("unexpected output key %q value %s", id, r.Value)
		}
		if _, ok := v["amount_cents"]; !ok || !strings.HasPrefix(fmt.Sprint(v["source"]), "events/") {
			t.Fatalf("output %s lacks amount_cents or source", r.Value)
		}
		seen[id] = true
	}
	if len(seen) != len(valid) {
		t.Fatalf("%d distinct events in the output, want %d", len(seen), len(valid))
	}

	dead := b.ReadAll(t, o.dlq)
	if len(dead) != wantDead {
		t.Fatalf("%d dead letters, want %d", len(dead), wantDead)
	}
	for _, r := range dead {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[sink.HeaderTopic] != "events" || h[sink.HeaderStage] != "decode" || h[sink.HeaderError] == "" ||
			h[sink.HeaderOffset] == "" || h[sink.HeaderPartition] == "" {
			t.Fatalf("dead letter %q has headers %v", r.Value, h)
		}
		if !demo.IsMalformed(r.Value) {
			t.Fatalf("dead letter value %q is not one of the malformed inputs, unchanged", r.Value)
		}
	}
}

// clientSoftware records the ClientSoftwareName of every ApiVersions
// request b answers from now on (confluent-kafka-go for librdkafka, kgo
// for franz-go); the function returns the names seen so far.
func clientSoftware(b *kafkatest.Broker) func() map[string]bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	b.Cluster().ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if r, ok := req.(*kmsg.ApiVersionsRequest); ok {
			mu.Lock()
			seen[r.ClientSoftwareName] = true
			mu.Unlock()
		}
		return nil, nil, false // observed only: the broker answers it
	})
	return func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}
