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
)

// The tests of this file run Each's fast calls (no time passes in the
// bubble) through a first chunk, then hold one call in the middle of the
// second. They pin down what the values whose call returned before it
// become.

// A function that ignores its context, after a run of fast calls, is
// abandoned by a revoke or a shutdown past the drain timeout.
// Each of the 100 values before it (offsets 256 to 355 of the second
// chunk) had its call return nil, so they are finished: the partition
// must be committed exactly up to the abandoned record (356) and the
// *StageError wrapping ErrAbandoned must name that record, as it does
// when the same happens in the first chunk
// (pipeline TestRevokeOrLossAbandonsAFunctionThatIgnoresItsContext):
// values whose call returned complete while the stage's goroutine is
// inside the next call, so none of them is processed again by the next
// owner.
func TestEachAbandonedCallCommitsTheValuesBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(h *testkit.Harness) error
	}{
		{"revoke", func(h *testkit.Harness) error { _ = h.Fake().Revoke("t", 0); return h.Wait() }},
		{"shutdown", func(h *testkit.Harness) error { return h.Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stuck := int64(chunkOf + 100)
				release := make(chan struct{})
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(_ context.Context, r sluice.Record) error {
						if r.Offset == stuck {
							<-release // ignores its context
						}
						return nil
					}, stages.Name("write"))
				}, pipeline.WithDrainTimeout(4*time.Second))
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(chunkOf)...)
				h.WaitCommitted("t", 0, chunkOf) // the first chunk: the calls are fast
				h.Send("t", 0, testkit.Values(chunkOf)...)
				synctest.Wait() // 256 to 355 returned, 356 blocked
				err := tc.end(h)
				var se *sluice.StageError
				if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) {
					t.Errorf("Run returned %v, want a *StageError wrapping ErrAbandoned", err)
				} else if se.Offset != stuck {
					t.Errorf("the abandoned function's error names offset %d, want %d (the record still running; every record before it returned nil)", se.Offset, stuck)
				}
				if got := h.Committed("t", 0); got != stuck {
					t.Errorf("committed %d, want %d (every record before the abandoned one returned nil)", got, stuck)
				}
				close(release)
			})
		})
	}
}
