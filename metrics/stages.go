package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-go/sluice"
)

// Error kinds, the values of the kind label of sluice_stage_errors_total.
const (
	// KindInvalid: the function returned sluice.Invalid (bad input; the
	// record goes to the dead-letter destination).
	KindInvalid = "invalid"
	// KindPanic: the function panicked.
	KindPanic = "panic"
	// KindPermanent: the function returned sluice.Permanent (not retried;
	// Run stops).
	KindPermanent = "permanent"
	// KindRetryable: any other error; it is retried under the stage's retry
	// policy and stops Run once the attempts are used up.
	KindRetryable = "retryable"
)

var kinds = [...]string{KindInvalid, KindPanic, KindPermanent, KindRetryable}

const (
	kindInvalid = iota
	kindPanic
	kindPermanent
	kindRetryable
)

func kindOf(err error) int {
	var pe *sluice.PanicError
	switch {
	case sluice.IsInvalid(err):
		return kindInvalid
	case errors.As(err, &pe):
		return kindPanic
	case sluice.IsPermanent(err):
		return kindPermanent
	}
	return kindRetryable
}

// stageMetrics covers stage calls, keyed by stage name only: the same
// stage runs in every partition's graph.
type stageMetrics struct {
	duration *prometheus.HistogramVec
	errs     *prometheus.CounterVec
	retries  *prometheus.CounterVec
	failures *prometheus.CounterVec
	stuck    *prometheus.CounterVec
	byStage  *cache[string, *stageCounters]
}

// stageCounters are one stage's collectors, curried once.
type stageCounters struct {
	duration prometheus.Observer
	errs     [len(kinds)]prometheus.Counter
}

func (s *stageMetrics) init(b *builder, buckets []float64) {
	s.duration = b.histogramVec("sluice_stage_duration_seconds",
		"Duration of one call of a stage's user function (each attempt counts).", buckets, "stage")
	s.errs = b.counterVec("sluice_stage_errors_total",
		"Calls of a stage's user function that returned an error, by kind: invalid, panic, permanent, retryable.", "stage", "kind")
	s.retries = b.counterVec("sluice_stage_retries_total",
		"Retries of a stage call (or, for stage \"NAME (dead letter)\", of a dead-letter delivery) after a transient error.", "stage")
	s.failures = b.counterVec("sluice_stage_failures_total",
		"Stage errors that stopped Run.", "stage")
	s.stuck = b.counterVec("sluice_stuck_values_total",
		"Values that stayed in a stage's user function longer than the stuck threshold (pipeline.WithStuckThreshold).", "stage")
	s.byStage = newCache(func(stage string) *stageCounters {
		c := &stageCounters{duration: s.duration.WithLabelValues(stage)}
		for i, k := range kinds {
			c.errs[i] = s.errs.WithLabelValues(stage, k)
		}
		return c
	})
}

// OnStageCall implements [sluice.HookStageCall]: it observes d in
// sluice_stage_duration_seconds{stage} and, when err is not nil,
// increments sluice_stage_errors_total{stage,kind}. It does not allocate
// once the stage has been seen.
func (m *Metrics) OnStageCall(stage string, _ sluice.TopicPartition, d time.Duration, err error) {
	c := m.stages.byStage.get(stage)
	c.duration.Observe(d.Seconds())
	if err != nil {
		c.errs[kindOf(err)].Inc()
	}
}

// OnStageRetry implements [sluice.HookStageRetry]: it increments
// sluice_stage_retries_total{stage}.
func (m *Metrics) OnStageRetry(stage string, _ sluice.TopicPartition, _ int, _ time.Duration, _ error) {
	m.stages.retries.WithLabelValues(stage).Inc()
}

// OnStageFailed implements [sluice.HookStageFailed]: it increments
// sluice_stage_failures_total{stage}.
func (m *Metrics) OnStageFailed(stage string, _ sluice.TopicPartition, _ error) {
	m.stages.failures.WithLabelValues(stage).Inc()
}

// OnStuck implements [sluice.HookStuck]: it increments
// sluice_stuck_values_total{stage}.
func (m *Metrics) OnStuck(stage string, _ sluice.TopicPartition, _ int64, _ time.Duration) {
	m.stages.stuck.WithLabelValues(stage).Inc()
}
