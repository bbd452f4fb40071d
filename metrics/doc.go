// Package metrics exports what a Sluice consumer does to Prometheus and
// answers Kubernetes-style liveness and readiness probes.
//
// Both are [pipeline.Observer] implementations, registered with
// [pipeline.WithObserver]:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	if err != nil { ... }
//	health := metrics.NewHealth()
//	mux := http.NewServeMux()
//	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	mux.Handle("/healthz", health.LiveHandler())
//	mux.Handle("/readyz", health.ReadyHandler())
//	err = pipeline.Run(ctx, src, build, pipeline.WithObserver(m), pipeline.WithObserver(health))
//
// Every metric is named sluice_*; docs/metrics.md lists them with the
// alerts to build on them. Labels stay low-cardinality: topic and stage,
// plus partition on the lag gauge only.
package metrics
