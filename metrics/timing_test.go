package metrics_test

import (
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/testkit"
)

// observedBy runs one record through a stage that notes whether its
// stage calls are timed (Stage.Observed), with hooks registered.
func observedBy(t *testing.T, hooks ...sluice.Hook) bool {
	t.Helper()
	var observed bool
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stagekit.AddEnd(in, stagekit.StageSpec{Kind: "probe"}, func(s *stagekit.Stage, in *stagekit.Inlet[sluice.Record]) error {
				for c, ok := in.Recv(); ok; c, ok = in.Recv() {
					observed = s.Observed()
					for _, it := range c {
						s.Done(it.Ticket)
					}
					in.Release(c)
				}
				return nil
			})
		}, pipeline.WithHooks(hooks...))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("x"))
		h.WaitCommitted("t", 0, 1)
	})
	return observed
}

// Health handles no stage calls, so registered alone it makes no stage
// read the clock; Metrics times them.
func TestOnlyStageCallHooksMakeStagesReadTheClock(t *testing.T) {
	if observedBy(t, newHealth(t)) {
		t.Error("with only Health registered, Stage.Observed() = true: every stage call reads the clock")
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if !observedBy(t, newHealth(t), m) {
		t.Error("with Metrics registered, Stage.Observed() = false: sluice_stage_duration_seconds gets nothing")
	}
}
