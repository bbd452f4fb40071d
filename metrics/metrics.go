package metrics

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-go/sluice"
)

// Metrics is a [sluice.Hook] that exports a consumer's activity as
// Prometheus metrics (see docs/metrics.md for the list and which event
// feeds each). It implements every sluice.Hook* interface, including
// [sluice.HookStageCall], so stages time their calls while it is
// registered. Create it with [New] and pass it to [pipeline.WithHooks].
// It is safe for concurrent use, never blocks, and does not allocate on
// the per-value path (OnStageCall, OnValuesFiltered) once a stage or
// topic has been seen.
//
// One Metrics should observe one Run at a time: partition state (pauses,
// lag) is keyed by topic and partition only.
type Metrics struct {
	now     func() time.Time
	records recordMetrics
	stages  stageMetrics
	parts   partitionMetrics
	source  sourceMetrics
	// follower is fed by follow.Hook (follower.go), not by pipeline hooks.
	follower followerMetrics
}

// Metrics handles every event.
var (
	_ sluice.HookPartitionAssigned  = (*Metrics)(nil)
	_ sluice.HookPartitionRevoked   = (*Metrics)(nil)
	_ sluice.HookPartitionLost      = (*Metrics)(nil)
	_ sluice.HookPartitionPaused    = (*Metrics)(nil)
	_ sluice.HookPartitionResumed   = (*Metrics)(nil)
	_ sluice.HookRecordsDelivered   = (*Metrics)(nil)
	_ sluice.HookRecordsCompleted   = (*Metrics)(nil)
	_ sluice.HookValuesFiltered     = (*Metrics)(nil)
	_ sluice.HookRecordDeadLettered = (*Metrics)(nil)
	_ sluice.HookInFlight           = (*Metrics)(nil)
	_ sluice.HookStageCall          = (*Metrics)(nil)
	_ sluice.HookStageRetry         = (*Metrics)(nil)
	_ sluice.HookStageFailed        = (*Metrics)(nil)
	_ sluice.HookStuck              = (*Metrics)(nil)
	_ sluice.HookPolled             = (*Metrics)(nil)
	_ sluice.HookJoined             = (*Metrics)(nil)
	_ sluice.HookCommitted          = (*Metrics)(nil)
	_ sluice.HookHighWatermark      = (*Metrics)(nil)
)

// New creates the collectors and registers them on reg (pass
// prometheus.DefaultRegisterer explicitly to use the global registry). If
// a registration fails, for example because another Metrics with the same
// constant labels is already registered, New unregisters what it
// registered and returns an error naming the metric.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics.New: nil Registerer (pass prometheus.NewRegistry() or prometheus.DefaultRegisterer)")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	for name, b := range map[string][]float64{
		"WithStageBuckets": cfg.stageBuckets, "WithCommitBuckets": cfg.commitBuckets, "WithDrainBuckets": cfg.drainBuckets,
	} {
		if err := checkBuckets(b); err != nil {
			return nil, fmt.Errorf("metrics.New: %s(%v): %w", name, b, err)
		}
	}
	b := &builder{constLabels: cfg.constLabels}
	m := &Metrics{now: cfg.now}
	m.records.init(b)
	m.stages.init(b, cfg.stageBuckets)
	m.parts.init(b, cfg.drainBuckets)
	m.source.init(b, cfg.commitBuckets)
	m.follower.init(b)
	if err := b.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return errors.New("no buckets")
	}
	if !slices.IsSorted(b) || len(slices.Compact(slices.Clone(b))) != len(b) {
		return errors.New("bucket bounds must be strictly increasing")
	}
	return nil
}

// builder creates collectors and remembers them, with their names, for
// registration.
type builder struct {
	constLabels prometheus.Labels
	collectors  []named
}

type named struct {
	name string
	c    prometheus.Collector
}

func (b *builder) add(name string, c prometheus.Collector) {
	b.collectors = append(b.collectors, named{name, c})
}

// added is c, once b registered it under name.
func added[C prometheus.Collector](b *builder, name string, c C) C {
	b.add(name, c)
	return c
}

func (b *builder) counter(name, help string) prometheus.Counter {
	return added(b, name, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: b.constLabels}))
}

func (b *builder) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return added(b, name, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: b.constLabels}, labels))
}

func (b *builder) gauge(name, help string) prometheus.Gauge {
	return added(b, name, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: b.constLabels}))
}

func (b *builder) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return added(b, name, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: b.constLabels}, labels))
}

func (b *builder) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return added(b, name, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: b.constLabels}))
}

func (b *builder) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return added(b, name, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: b.constLabels}, labels))
}

// register registers every collector, or none.
func (b *builder) register(reg prometheus.Registerer) error {
	for i, n := range b.collectors {
		if err := reg.Register(n.c); err != nil {
			for _, done := range b.collectors[:i] {
				reg.Unregister(done.c)
			}
			return fmt.Errorf("metrics.New: registering %s: %w", n.name, err)
		}
	}
	return nil
}
