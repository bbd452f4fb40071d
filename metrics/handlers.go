package metrics

import (
	"net/http"
)

// LiveHandler serves [Health.Live] for a liveness probe (/healthz): 200
// with body "ok", or 503 with the reason. It answers every method and
// path it is mounted on.
func (h *Health) LiveHandler() http.Handler { return probeHandler(h.Live) }

// ReadyHandler serves [Health.Ready] for a readiness probe (/readyz): 200
// with body "ok", or 503 with the reason.
func (h *Health) ReadyHandler() http.Handler { return probeHandler(h.Ready) }

func probeHandler(check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
