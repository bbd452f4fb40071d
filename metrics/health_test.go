package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
)

// clock is a fake clock for Health.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Unix(1_700_000_000, 0)} }
func (c *clock) health(t testing.TB, opts ...metrics.HealthOption) *metrics.Health {
	return newHealth(t, append([]metrics.HealthOption{metrics.WithHealthClock(c.now)}, opts...)...)
}

// probe serves one GET through h and returns the status and body.
func probe(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func expectProbe(t *testing.T, h http.Handler, code int, bodyHas string) {
	t.Helper()
	gotCode, body := probe(t, h)
	if gotCode != code || !strings.Contains(body, bodyHas) {
		t.Fatalf("probe: %d %q, want %d containing %q", gotCode, body, code, bodyHas)
	}
}

func TestLivenessFollowsPolls(t *testing.T) {
	c := newClock()
	h := c.health(t, metrics.WithPollTimeout(10*time.Second), metrics.WithStartupGrace(time.Minute))
	live := h.LiveHandler()

	expectProbe(t, live, 200, "ok") // within the startup grace
	c.add(59 * time.Second)
	expectProbe(t, live, 200, "ok")
	c.add(2 * time.Second)
	expectProbe(t, live, 503, "no poll since start 1m1s ago (startup grace 1m0s)")

	h.OnPolled(c.now())
	expectProbe(t, live, 200, "ok")
	c.add(10 * time.Second)
	expectProbe(t, live, 200, "ok") // exactly at the timeout still passes
	c.add(time.Millisecond)
	expectProbe(t, live, 503, "last poll 10.001s ago (poll timeout 10s)")
	h.OnPolled(c.now())
	expectProbe(t, live, 200, "ok")
}

func TestLivenessDefaults(t *testing.T) {
	c := newClock()
	h := c.health(t)
	c.add(metrics.DefaultStartupGrace)
	if err := h.Live(); err != nil {
		t.Fatalf("Live at the end of the default grace: %v", err)
	}
	h.OnPolled(c.now())
	c.add(metrics.DefaultPollTimeout + time.Second)
	if err := h.Live(); err == nil {
		t.Fatal("Live passes 31s after the last poll")
	}
}

func TestStuckPartitionFailsLiveness(t *testing.T) {
	c := newClock()
	h := c.health(t)
	h.OnPolled(c.now())
	tp := sluice.TopicPartition{Topic: "orders", Partition: 2}
	other := sluice.TopicPartition{Topic: "orders", Partition: 5}

	h.OnStuck("enrich", tp, 41, time.Minute)
	c.add(5 * time.Second)
	expectProbe(t, h.LiveHandler(), 503, `stage "enrich" stuck on orders/2 at offset 41 for 1m5s`)

	h.OnRecordsCompleted(other, 10, 100) // another partition: still stuck
	h.OnRecordsCompleted(tp, 3, 41)      // progress before the stuck value: still stuck
	if err := h.Live(); err == nil {
		t.Fatal("Live passes while offset 41 is not complete")
	}
	h.OnRecordsCompleted(tp, 1, 42) // the stuck value completed
	if err := h.Live(); err != nil {
		t.Fatalf("Live after the stuck value completed: %v", err)
	}

	h.OnStuck("enrich", tp, 50, time.Minute)
	h.OnStuck("write", other, -1, time.Minute) // offset unknown
	err := h.Live()
	if err == nil || !strings.Contains(err.Error(), "orders/2") || !strings.Contains(err.Error(), "orders/5") {
		t.Fatalf("Live = %v, want both partitions", err)
	}
	h.OnPartitionRevoked(tp, time.Second, false)
	h.OnRecordsCompleted(other, 1, 7) // any progress clears an unknown offset
	if err := h.Live(); err != nil {
		t.Fatalf("Live after revoke and progress: %v", err)
	}

	h.OnStuck("enrich", tp, 60, time.Minute)
	h.OnPartitionLost(tp)
	if err := h.Live(); err != nil {
		t.Fatalf("Live after the stuck partition was lost: %v", err)
	}
}

func TestReadiness(t *testing.T) {
	c := newClock()
	h := c.health(t)
	ready := h.ReadyHandler()
	expectProbe(t, ready, 503, "not a member of the consumer group yet")
	h.OnJoined()
	expectProbe(t, ready, 200, "ok")
	h.OnStageFailed("write", sluice.TopicPartition{Topic: "t"}, errors.New("disk full"))
	h.OnStageFailed("other", sluice.TopicPartition{Topic: "t"}, errors.New("second error"))
	expectProbe(t, ready, 503, "stopped by a stage error: disk full")
	h.OnJoined()
	expectProbe(t, ready, 503, "disk full") // not ready again after a fatal error
}

func TestProbeHeaders(t *testing.T) {
	h := newClock().health(t)
	rec := httptest.NewRecorder()
	h.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
	if rec.Code != 503 || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("HEAD /readyz: %d %v", rec.Code, rec.Header())
	}
}
