package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// New and NewHealth are hooks: register both with the pipeline and serve
// the registry and the probes over HTTP with Handler.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	health, err := metrics.NewHealth() // just before Run: the startup grace counts from here
	if err != nil {
		panic(err)
	}
	mux, err := metrics.Handler(reg, health) // /metrics, /healthz, /readyz
	if err != nil {
		panic(err)
	}
	// In production: go http.ListenAndServe(":9464", mux)

	fake := testkit.NewFake() // in production: source.NewSource(...)
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Filter(in, func(r sluice.Record) bool { return len(r.Value) > 0 }, stages.Name("non-empty")))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- pipeline.Run(ctx, fake, build, pipeline.WithHooks(m, health))
	}()
	_ = fake.Send("orders", 0, []byte("a"), []byte(""), []byte("c"))
	_ = fake.Assign("orders", 0)
	for fake.Committed("orders", 0) < 3 {
		<-fake.Changed()
	}

	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	fmt.Printf("/readyz: %d %s", get("/readyz").Code, get("/readyz").Body)
	sc := bufio.NewScanner(get("/metrics").Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "sluice_records_") {
			fmt.Println(sc.Text())
		}
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// /readyz: 200 ok
	// sluice_records_completed_total{topic="orders"} 3
	// sluice_records_delivered_total{topic="orders"} 3
	// sluice_records_filtered_total{stage="non-empty",topic="orders"} 1
	// Run: <nil>
}

// Handler serves /metrics, /healthz and /readyz in one call.
func ExampleHandler() {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		panic(err)
	}
	health, err := metrics.NewHealth()
	if err != nil {
		panic(err)
	}
	h, err := metrics.Handler(reg, health)
	if err != nil {
		panic(err)
	}
	// In production: http.ListenAndServe(":9464", h), and
	// pipeline.WithHooks(m, health) on Run.
	for _, path := range []string{"/healthz", "/readyz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Printf("%s: %d %s", path, rec.Code, rec.Body)
	}
	// Output:
	// /healthz: 200 ok
	// /readyz: 503 not a member of the consumer group yet
}
