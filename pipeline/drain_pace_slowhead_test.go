package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// One record in 50 is slow (2 s, all of one key in a PoolByKey), the
// others fast: the committable offset stands still for 2 s at every slow
// record, then jumps. The measured rate is about 25 records/s, so the
// feeder keeps about 250 records (5 slow ones, 10 s of work) in the
// graph, and a revoke after three minutes (the first measurements long
// past) drains within the drain timeout.
func TestASlowRecordAtTheHeadDoesNotUnpaceTheFeeder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		var hook revokes
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			key := func(r sluice.Record) string {
				if r.Offset%50 == 0 {
					return "slow"
				}
				return fmt.Sprint(r.Offset)
			}
			done := stages.PoolByKey(in, 8, key, func(ctx context.Context, r sluice.Record) (int64, error) {
				d := time.Millisecond
				if r.Offset%50 == 0 {
					d = 2 * time.Second
				}
				select {
				case <-time.After(d):
					return r.Offset, nil
				case <-ctx.Done():
					return 0, context.Cause(ctx)
				}
			})
			return stages.Discard(done)
		}, pipeline.WithHooks(&hook))
		assignAndSend(h, n)
		time.Sleep(3 * time.Minute)
		h.Revoke("t", 0)
		if len(hook.timedOut) != 1 || hook.timedOut[0] {
			t.Fatalf("revoke: timed out %v after %v, want a drain within the drain timeout (%v)",
				hook.timedOut, hook.took, pipeline.DefaultDrainTimeout)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}
