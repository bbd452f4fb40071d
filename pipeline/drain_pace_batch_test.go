package pipeline_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A Batch larger than the feeder's first limit (one chunk, 256 records)
// gets its first batch whole at once: the records of a new partition do
// not wait for maxWait (here an hour) nor for the stall rule (625 ms with
// the default drain timeout) before they commit.
func TestANewGraphFeedsItsBatchsFirstBatchWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out sink
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(stages.Batch(in, 600, time.Hour), func(_ context.Context, b []sluice.Record) error {
				out.add(p.Partition, int64(len(b)))
				return nil
			})
		})
		start := time.Now()
		assignAndSend(h, 1800)
		h.WaitCommitted("t", 0, 1800)
		if took := time.Since(start); took != 0 {
			t.Errorf("3 batches of 600 took %v, want no wait", took)
		}
		if got := out.of(0); len(got) != 3 || got[0] != 600 || got[1] != 600 || got[2] != 600 {
			t.Fatalf("batches %v, want [600 600 600]", got)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}
