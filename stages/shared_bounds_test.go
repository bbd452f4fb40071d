package stages_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// hangUntilDone is a write to a server that stopped answering: it returns
// only when its context ends.
func hangUntilDone(ctx context.Context, _ []string) error {
	<-ctx.Done()
	return ctx.Err()
}

// A hung write must be told to stop when the drain times out, and a
// partition waiting for its turn must give up then too: shutdown takes
// exactly the drain timeout and commits nothing of the unwritten values.
func TestSharedBatcherHungWriteStopsAtTheDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := stages.NewSharedBatcher(hangUntilDone, 1, time.Minute)
		h := sharedHarness(t, b, pipeline.WithDrainTimeout(time.Second))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a")) // its write hangs
		h.Send("t", 1, []byte("b")) // waits for its turn
		synctest.Wait()
		start := time.Now()
		if err := h.Stop(); err != nil {
			t.Fatalf("Run returned %v, want nil (a drain timeout is not an error)", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("shutdown took %v, want the drain timeout (1s)", took)
		}
		if c0, c1 := h.Committed("t", 0), h.Committed("t", 1); c0 != -1 || c1 != -1 {
			t.Errorf("committed %d and %d, want -1 and -1 (nothing was written)", c0, c1)
		}
	})
}

// A write that serves only partitions that were lost is cancelled, even
// though the partition whose goroutine runs it is still owned; that
// partition then goes on with its own values.
func TestSharedBatcherWriteStopsWhenItsPartitionsAreLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		write := func(ctx context.Context, batch []string) error {
			if slices.ContainsFunc(batch, func(v string) bool { return strings.HasPrefix(v, "0:") }) {
				return hangUntilDone(ctx, batch)
			}
			return w.write(ctx, batch)
		}
		// "heavy" weighs a whole batch: adding it closes the batch holding
		// 0:a, so partition 1's goroutine writes a batch of partition 0 only.
		weight := func(v string) int {
			if strings.HasSuffix(v, "heavy") {
				return 2
			}
			return 1
		}
		b := stages.NewSharedBatcherByWeight(write, 2, time.Second, weight)
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("heavy"))
		synctest.Wait()
		h.Lose("t", 0)
		h.WaitCommitted("t", 1, 1)
		if got := w.list(); !slices.EqualFunc(got, [][]string{{"1:heavy"}}, slices.Equal) {
			t.Errorf("batches %v, want [[1:heavy]]", got)
		}
		if got := h.Committed("t", 0); got != -1 {
			t.Errorf("lost partition committed %d, want -1", got)
		}
	})
}
