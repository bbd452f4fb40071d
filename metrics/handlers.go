package metrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns the one HTTP handler a consumer needs: /metrics serves
// reg in the Prometheus exposition format (errors while gathering are
// counted in promhttp_metric_handler_errors_total on reg and served as
// 500), /healthz serves [Health.LiveHandler] and /readyz
// [Health.ReadyHandler]; any other path is 404. Pass the registry
// [New] registered on (a *prometheus.Registry is both a Registerer and a
// Gatherer). A nil reg or health is an error naming it. The handler is
// safe for concurrent use.
func Handler(reg prometheus.Gatherer, health *Health) (http.Handler, error) {
	var errs []error
	if reg == nil {
		errs = append(errs, errors.New("metrics.Handler: nil Gatherer reg (pass the registry given to metrics.New)"))
	}
	if health == nil {
		errs = append(errs, errors.New("metrics.Handler: nil Health (pass metrics.NewHealth())"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	opts := promhttp.HandlerOpts{}
	if r, ok := reg.(prometheus.Registerer); ok {
		opts.Registry = r // count the handler's own errors
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, opts))
	mux.Handle("/healthz", health.LiveHandler())
	mux.Handle("/readyz", health.ReadyHandler())
	return mux, nil
}

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
