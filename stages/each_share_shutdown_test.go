package stages_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// In a share group, a shutdown acknowledges every finished record and
// releases the unfinished ones (docs/share.md, "Clean shutdown"). Each
// runs over the fake share source, whose polls take 32 records: the first
// batch (0 to 31) is fast, as is the second one (32 to 63) but for the
// call for offset 52, which ignores its context, so the shutdown abandons
// it. The calls for 32 to 51 returned nil: those records must be
// accepted, and only the 12 records from 52 on (52 still running, 53 to
// 63 never called) released and left unacknowledged: a record whose call
// returned completes then, not once the stage's goroutine is out of the
// next call, so it is not released with the rest and delivered again.
func TestEachShareShutdownAcceptsTheValuesBeforeAnAbandonedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const batch = 32
		stuck := int64(batch + 20)
		release := make(chan struct{})
		d := sourcetest.NewFakeShareDriver()
		d.CreateTopic(t, "t", 1)
		produce := func(n int) {
			recs := make([]sluice.Record, n)
			for i := range recs {
				recs[i].Value = []byte("v")
			}
			d.Produce(t, "t", recs...)
		}
		r := testkit.Start(t, d.NewShareSource(t, "g", "t"), func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == stuck {
					<-release // ignores its context
				}
				return nil
			}, stages.Name("write"))
		}, pipeline.WithDrainTimeout(4*time.Second))
		produce(batch)
		synctest.Wait()
		if got := d.Unacknowledged(t, "g", "t")[0]; got != 0 {
			t.Fatalf("%d records of the first batch unacknowledged, want 0", got)
		}
		produce(batch)
		synctest.Wait() // 32 to 51 returned, 52 blocked
		if err := r.Stop(t); !errors.Is(err, sluice.ErrAbandoned) {
			t.Errorf("Run returned %v, want an error wrapping ErrAbandoned", err)
		}
		if got, want := d.Unacknowledged(t, "g", "t")[0], 2*batch-stuck; got != want {
			t.Errorf("%d records left unacknowledged (released), want %d (from the abandoned %d on: every record before it returned nil and must be accepted)", got, want, stuck)
		}
		close(release)
	})
}
