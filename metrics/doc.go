// Package metrics exports what a Sluice consumer does to Prometheus and
// answers Kubernetes-style liveness and readiness probes.
//
// [Metrics] and [Health] are hooks (see [sluice.Hook]), registered with
// [pipeline.WithHooks]; [Handler] serves both over HTTP:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	if err != nil { ... }
//	health, err := metrics.NewHealth()
//	if err != nil { ... }
//	h, err := metrics.Handler(reg, health) // /metrics, /healthz, /readyz
//	if err != nil { ... }
//	go http.ListenAndServe(":9464", h)
//	err = pipeline.Run(ctx, src, build, pipeline.WithHooks(m, health))
//
// Metrics handles every event, including stage calls, which makes every
// stage time its calls; Health handles seven events and none of the
// per-call ones, so on its own it adds no clock reads to the stages.
//
// Every metric is named sluice_*; docs/metrics.md lists them with the
// event that feeds each and the alerts to build on them. Labels stay
// low-cardinality: topic and stage, plus partition on the lag gauge only.
package metrics
