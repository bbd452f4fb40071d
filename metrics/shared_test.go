package metrics_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A SharedBatcher's write is a stage call like any other: it appears in
// sluice_stage_duration_seconds and sluice_stage_errors_total (the "slow
// stage" alert of docs/metrics.md can fire for it), and its retries in
// sluice_stage_retries_total.
func TestSharedBatcherWritesAppearInTheStageMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		failed := false // the write runs on one goroutine at a time
		write := func(_ context.Context, batch []string) error {
			time.Sleep(2 * time.Second) // a slow warehouse insert
			if !failed {
				failed = true
				return errors.New("warehouse timeout")
			}
			return nil
		}
		b := stages.NewSharedBatcher(write, 2, time.Minute, stages.Name("insert"))
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			vals := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) { return string(r.Value), nil })
			return b.Feed(vals)
		}, pipeline.WithHooks(m), pipeline.WithRetry(sluice.RetryPolicy{Initial: time.Millisecond}))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Send("t", 1, []byte("b"))
		h.WaitCommitted("t", 0, 1)
		h.WaitCommitted("t", 1, 1)

		// One batch of both values: a failed attempt, then a successful one.
		want(t, reg, 2, "sluice_stage_duration_seconds", "stage", "insert")
		want(t, reg, 1, "sluice_stage_errors_total", "stage", "insert", "kind", "retryable")
		want(t, reg, 1, "sluice_stage_retries_total", "stage", "insert")
		// synctest's clock: each call took exactly 2 s.
		if sum := histogramSum(t, reg, "sluice_stage_duration_seconds", "insert"); sum != 4 {
			t.Errorf("insert took %v s in all, want 4 (two calls of 2 s)", sum)
		}
	})
}

// histogramSum returns the sum of the histogram name{stage}.
func histogramSum(t *testing.T, reg prometheus.Gatherer, name, stage string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "stage" && lp.GetValue() == stage {
					return m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no series %s{stage=%q}", name, stage)
	return 0
}
