package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/metrics"
)

func serveGet(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// Handler serves the registry on /metrics and the probes on /healthz and
// /readyz, and nothing else.
func TestHandlerServesMetricsAndProbes(t *testing.T) {
	reg, m := newMetrics(t)
	health := newHealth(t)
	h, err := metrics.Handler(reg, health)
	if err != nil {
		t.Fatal(err)
	}
	m.OnJoined()
	if code, body := serveGet(t, h, "/metrics"); code != 200 || !strings.Contains(body, "sluice_group_joins_total 1\n") {
		t.Errorf("/metrics: %d, body without sluice_group_joins_total 1:\n%s", code, body)
	}
	if code, body := serveGet(t, h, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz within the startup grace: %d %q, want 200 ok", code, body)
	}
	if code, body := serveGet(t, h, "/readyz"); code != 503 || !strings.Contains(body, "consumer group") {
		t.Errorf("/readyz before joining: %d %q, want 503 naming the group", code, body)
	}
	health.OnJoined()
	if code, body := serveGet(t, h, "/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz after joining: %d %q, want 200 ok", code, body)
	}
	if code, _ := serveGet(t, h, "/"); code != 404 {
		t.Errorf("/: %d, want 404", code)
	}
}

// A nil registry or Health is an error naming it.
func TestHandlerRejectsNilArguments(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tc := range []struct {
		name   string
		reg    prometheus.Gatherer
		health *metrics.Health
		want   []string
	}{
		{"nil registry", nil, newHealth(t), []string{"nil Gatherer reg"}},
		{"nil health", reg, nil, []string{"nil Health"}},
		{"both", nil, nil, []string{"nil Gatherer reg", "nil Health"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := metrics.Handler(tc.reg, tc.health)
			if err == nil || h != nil {
				t.Fatalf("Handler = %v, %v; want nil and an error", h, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
