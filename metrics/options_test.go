package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/metrics"
)

// Invalid Health options are errors naming each option, never ignored.
func TestNewHealthRejectsInvalidOptions(t *testing.T) {
	h, err := metrics.NewHealth(metrics.WithPollTimeout(0), metrics.WithStartupGrace(-time.Second), metrics.WithHealthClock(nil))
	if err == nil || h != nil {
		t.Fatalf("NewHealth = %v, %v; want nil and an error", h, err)
	}
	for _, want := range []string{
		"metrics.NewHealth: WithPollTimeout(0s): the timeout must be positive",
		"metrics.NewHealth: WithStartupGrace(-1s): the grace must be positive",
		"metrics.NewHealth: WithHealthClock(nil)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A nil clock for New is an error naming the option, and nothing is
// registered.
func TestNewRejectsANilClock(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithClock(nil))
	if err == nil || m != nil || !strings.Contains(err.Error(), "metrics.New: WithClock(nil)") {
		t.Fatalf("New(WithClock(nil)) = %v, %v; want nil and an error naming WithClock", m, err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("New registered %d metric families despite the error", len(mfs))
	}
}
