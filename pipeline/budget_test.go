package pipeline_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A paused partition resumes whatever the global limits, up to the largest
// int64: computing three quarters of a limit must not overflow.
func TestHugeInFlightLimitsStillResumePausedPartitions(t *testing.T) {
	for name, opt := range map[string]pipeline.Option{
		"records 1<<62":    pipeline.WithMaxInFlight(1 << 62),
		"records MaxInt64": pipeline.WithMaxInFlight(math.MaxInt64),
		"bytes 1<<62":      pipeline.WithMaxInFlightBytes(1 << 62),
		"bytes MaxInt64":   pipeline.WithMaxInFlightBytes(math.MaxInt64),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate(0)
				h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
					return stages.Each(in, func(ctx context.Context, r pipeline.Record) error { return g.wait(ctx, r.Offset) })
				}, opt, pipeline.WithPartitionQueue(100))
				h.Assign("t", 0)
				h.Send("t", 0, values(1000)...)
				synctest.Wait()
				if got := h.Fake().Delivered("t", 0); got != 128 {
					t.Fatalf("delivered %d records while offset 0 was blocked, want 128 (paused at the partition queue)", got)
				}
				g.open(0)
				h.WaitCommitted("t", 0, 1000)
			})
		})
	}
}
