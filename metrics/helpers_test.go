package metrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// parse fails with Invalid for values that are not numbers.
var parse = enginetest.ParseInt

// sample returns the value of the series name{labels} in reg: a counter's
// or gauge's value, a histogram's sample count. ok is false when the
// series does not exist.
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) (v float64, ok bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
			t.Fatalf("%s has unexpected type %v", name, mf.GetType())
		}
	}
	return 0, false
}

// want fails the test unless the series exists with value v.
func want(t *testing.T, reg prometheus.Gatherer, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := sample(t, reg, name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series, want %v", name, labels, v)
	} else if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// absent fails the test if the series exists.
func absent(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) {
	t.Helper()
	if got, ok := sample(t, reg, name, labels...); ok {
		t.Errorf("%s%v = %v, want no series", name, labels, got)
	}
}

// newHealth is metrics.NewHealth for options that must be valid.
func newHealth(t testing.TB, opts ...metrics.HealthOption) *metrics.Health {
	t.Helper()
	h, err := metrics.NewHealth(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// newMetrics returns a new registry and the metrics registered in it.
func newMetrics(t *testing.T) (*prometheus.Registry, *metrics.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, m
}

// startFollower runs a follow source over a new Fake whose leader groups
// committed up to lead for every partition (-1: nothing), polled every
// 100ms, with a new registry's metrics as both its and Run's hook.
func startFollower(t *testing.T, lead *atomic.Int64) (*prometheus.Registry, *testkit.Fake, *testkit.Running) {
	t.Helper()
	reg, m := newMetrics(t)
	leaders := follow.LeadersFunc(func(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
		out := map[sluice.TopicPartition]int64{}
		for _, tp := range tps {
			out[tp] = lead.Load()
		}
		return out, nil
	})
	fake := testkit.NewFake()
	src, err := follow.New(fake, leaders, follow.WithInterval(100*time.Millisecond), follow.WithHook(m))
	if err != nil {
		t.Fatal(err)
	}
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}, pipeline.WithHooks(m))
	return reg, fake, run
}

// holdUntil is a stage function that holds the record at offset until
// release is closed and lets every other record through.
func holdUntil(offset int64, release <-chan struct{}) func(context.Context, sluice.Record) error {
	return func(_ context.Context, r sluice.Record) error {
		if r.Offset == offset {
			<-release
		}
		return nil
	}
}
