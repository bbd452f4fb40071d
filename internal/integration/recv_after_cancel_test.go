package integration

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/testkit"
)

// TestRecvAfterLossReturnsNothing: Inlet.Recv returns false once the
// partition context is done, even with chunks still buffered on the edge.
// A select between the input channel and ctx.Done() alone picks either
// with equal priority, so a stage of a lost (or drain-timed-out) partition
// would keep receiving them about half of the time: its function would be
// called for up to Buffer (4) more chunks of a partition another consumer
// may already own, and Kill (which the poll loop waits for) would be
// delayed by that work. Recv (internal/engine/stage.go) therefore checks
// the context before the select and drops a chunk received when it is
// already done. Each iteration blocks the end stage with full chunks
// queued behind it, loses the partition, then calls Recv once: it must
// return false. Without the check a single iteration would pass with
// probability 1/2, so 20 of them all passing is a 1-in-a-million event.
func TestRecvAfterLossReturnsNothing(t *testing.T) {
	const iterations = 20
	delivered := 0
	for range iterations {
		synctest.Test(t, func(t *testing.T) {
			after := make(chan bool, 1)
			build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stagekit.AddEnd(in, stagekit.StageSpec{Name: "hold", Kind: "hold"},
					func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record]) error {
						if _, ok := inl.Recv(); !ok {
							after <- false
							return nil
						}
						<-s.Context().Done() // the partition is lost
						_, ok := inl.Recv()
						after <- ok
						return nil
					})
			}
			h := testkit.New(t, build)
			h.Assign("t", 0)
			vals := make([][]byte, 4096)
			for i := range vals {
				vals[i] = fmt.Appendf(nil, "%d", i)
			}
			h.Send("t", 0, vals...)
			synctest.Wait() // the feeder is blocked on a full edge
			h.Lose("t", 0)
			if <-after {
				delivered++
			}
			if err := h.Stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
		})
	}
	if delivered > 0 {
		t.Errorf("Recv returned a chunk after the partition was lost in %d of %d iterations, want never", delivered, iterations)
	}
}
