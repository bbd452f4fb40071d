package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-go/sluice/metrics"
)

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
