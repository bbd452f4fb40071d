package stages

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// errBatchOrphaned is the cause of a shared write's context when every
// partition with values in the batch was lost, timed out or finished.
var errBatchOrphaned = errors.New("stages: every partition with values in the shared batch is gone")

// writeContext returns the context of one shared write run on s's
// goroutine, and the function that releases it. The context ends with s's
// partition context (s must be free to exit when its partition is lost or
// its drain times out) and as soon as every owner's partition context
// ended: then no one can commit what the write would write.
func writeContext(s *stagekit.Stage, owners []entry) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(s.Context())
	seen := make(map[*stagekit.Stage]bool, 4)
	for _, e := range owners {
		seen[e.s] = true
	}
	var left atomic.Int32
	left.Store(int32(len(seen)))
	stops := make([]func() bool, 0, len(seen))
	for o := range seen {
		stops = append(stops, context.AfterFunc(o.Context(), func() {
			if left.Add(-1) == 0 {
				cancel(errBatchOrphaned)
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}
