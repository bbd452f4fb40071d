package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// TestTelemetryServer serves the endpoints on a free port, checks them
// and shuts the server down (goleak checks that nothing is left).
func TestTelemetryServer(t *testing.T) {
	tel, err := newTelemetry()
	if err != nil {
		t.Fatal(err)
	}
	h, err := tel.handler()
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := serve("127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base := "http://" + addr
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "sluice_inflight_records 0") ||
		!strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q, want 200 ok within the startup grace", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "consumer group") {
		t.Fatalf("/readyz before joining: %d %q", code, body)
	}
	tel.health.OnJoined()
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ok\n" {
		t.Fatalf("/readyz after joining: %d %q", code, body)
	}
	stop()
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the server still answers after stop")
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestServeDisabledAndBadAddress(t *testing.T) {
	addr, stop, err := serve("", http.NotFoundHandler())
	if err != nil || addr != "" {
		t.Fatalf("serve(\"\") = %q, %v", addr, err)
	}
	stop()
	if _, _, err := serve("127.0.0.1:notaport", http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("bad address: %v", err)
	}
	o := options{group: "g", input: "i", output: "o", dlq: "d", workers: 1, messages: 1, metricsAddr: "localhost"}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--metrics-addr=localhost") {
		t.Fatalf("validate: %v", err)
	}
}

// TestDemoSummaryFromMetrics runs a small demo with the metrics server on
// and checks that the summary's counts, read from the sluice_ counters,
// match the workload.
func TestDemoSummaryFromMetrics(t *testing.T) {
	const n = 500 // 5 malformed: i%100 == 37
	o := options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 2, messages: n,
		metricsAddr: "127.0.0.1:0"}
	b := kafkatest.NewBroker(t, demoTopics(o)...)
	out := runDemoOn(t, o, b)
	if !regexp.MustCompile(`metrics on http://127\.0\.0\.1:\d+/metrics`).MatchString(out) {
		t.Fatalf("no metrics address in the output:\n%s", out)
	}
	if !strings.Contains(out, "done: consumed 500, produced 495, dead-lettered 5, committed 500 of 500 in ") {
		t.Fatalf("summary:\n%s", out)
	}
}
