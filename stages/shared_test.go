package stages_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// writes records every batch written.
type writes struct {
	mu      sync.Mutex
	batches [][]string
	fail    error
}

func (w *writes) write(_ context.Context, batch []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return w.fail
	}
	w.batches = append(w.batches, slices.Clone(batch))
	return nil
}

func (w *writes) list() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.batches)
}

func sharedHarness(t *testing.T, b *stages.SharedBatcher[string], opts ...pipeline.Option) *testkit.Harness {
	return testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		vals := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) {
			return fmt.Sprintf("%d:%s", r.Partition, r.Value), nil
		})
		return b.Feed(vals)
	}, opts...)
}

func TestSharedBatcherFillsFromAllPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := sharedWrites(t, 4, time.Second)
		h.Assign("t", 0, 1, 2)
		h.Send("t", 0, []byte("a"), []byte("b"))
		h.Send("t", 1, []byte("c"), []byte("d"))
		synctest.Wait()
		if got := w.list(); len(got) != 1 || len(got[0]) != 4 {
			t.Fatalf("batches %v, want one batch of the 4 values of partitions 0 and 1", got)
		}
		if h.Committed("t", 0) != 2 || h.Committed("t", 1) != 2 {
			t.Fatalf("committed %d and %d, want 2 and 2", h.Committed("t", 0), h.Committed("t", 1))
		}
		h.Send("t", 2, []byte("e"))
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if got := w.list(); len(got) != 1 {
			t.Fatalf("a partial batch was written before maxWait: %v", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := w.list(); len(got) != 2 || !slices.Equal(got[1], []string{"2:e"}) {
			t.Fatalf("batches %v, want the partial batch [2:e] after maxWait", got)
		}
		if got := h.Committed("t", 2); got != 1 {
			t.Fatalf("partition 2 committed %d, want 1", got)
		}
	})
}

// onePendingEach returns the writes of a SharedBatcher of size 100 and
// maxWait and its Harness, with t/0 and t/1 assigned and one value pending
// in each (0:a, 1:b).
func onePendingEach(t *testing.T, maxWait time.Duration) (*writes, *testkit.Harness) {
	t.Helper()
	w, h := sharedWrites(t, 100, maxWait)
	h.Assign("t", 0, 1)
	h.Send("t", 0, []byte("a"))
	h.Send("t", 1, []byte("b"))
	synctest.Wait()
	return w, h
}

func TestSharedBatcherFlushesARevokedPartitionBeforeAcknowledging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := onePendingEach(t, time.Hour)
		h.Revoke("t", 0)
		if got := h.Committed("t", 0); got != 1 {
			t.Fatalf("revoked partition committed %d, want 1", got)
		}
		if got := w.list(); len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("batches %v, want one batch with both partitions' values", got)
		}
		// Partition 1 stays assigned: its value completes on its own graph,
		// which the revoke of partition 0 does not wait for.
		synctest.Wait()
		if got := h.Committed("t", 1); got != 1 {
			t.Fatalf("partition 1 committed %d, want 1 (its value was in the written batch)", got)
		}
	})
}

func TestSharedBatcherNeverCommitsALostPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := onePendingEach(t, time.Minute)
		h.Lose("t", 0)
		time.Sleep(time.Minute)
		synctest.Wait()
		// The lost partition's pending value may go out with the batch or
		// not (the partition's context ended while the batch waited); the
		// other partition's is written once either way.
		if got := w.list(); len(got) != 1 || !slices.Contains(got[0], "1:b") || len(got[0]) > 2 {
			t.Fatalf("batches %v, want one batch with partition 1's value", got)
		}
		if got := h.Committed("t", 0); got != -1 {
			t.Fatalf("lost partition committed %d, want -1", got)
		}
		if got := h.Committed("t", 1); got != 1 {
			t.Fatalf("partition 1 committed %d, want 1", got)
		}
	})
}

func TestSharedBatcherWriteFailureStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("clickhouse: table is read-only")
		w := writes{fail: sluice.Permanent(boom)}
		b := stages.NewSharedBatcher(w.write, 2, time.Second)
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Send("t", 1, []byte("b"))
		if err := h.Wait(); !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want %v", err, boom)
		}
		if h.Committed("t", 0) != -1 || h.Committed("t", 1) != -1 {
			t.Fatal("a failed batch was committed")
		}
	})
}

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

// A SharedBatcher created inside the builder (one per partition) fails the
// build of the second partition: "create it once, outside the builder".
func TestSharedBatcherCreatedPerPartitionFailsTheBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			b := stages.NewSharedBatcher(w.write, 10, time.Second) // wrong: one per partition
			return b.Feed(stages.Map(in, recordString))
		})
		if err := h.Fake().Assign("t", 0); err != nil {
			t.Fatalf("first partition: %v", err)
		}
		if err := h.Fake().Assign("t", 1); err == nil {
			t.Fatal("second partition's build succeeded; want a BuildError")
		}
		err := h.Wait()
		var be *sluice.BuildError
		if !errors.As(err, &be) || be.Partition != 1 || !strings.Contains(err.Error(), "create it once, before pipeline.Run") {
			t.Fatalf("Run returned %v, want a BuildError for t/1 saying to create the batcher once", err)
		}
	})
}

// One batcher created before Run serves every partition, also after a
// partition is revoked and assigned again (a new graph at the same place).
func TestSharedBatcherCreatedOnceServesEveryPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := sharedWrites(t, 10, time.Second)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Revoke("t", 0)
		h.Assign("t", 0)
		h.Send("t", 0, []byte("b"))
		h.Send("t", 1, []byte("c"))
		h.WaitCommitted("t", 0, 2)
		h.WaitCommitted("t", 1, 1)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
}

// Feeding one batcher twice in one partition's graph fails the build.
func TestSharedBatcherFedTwiceInOneGraphFailsTheBuild(t *testing.T) {
	var w writes
	b := stages.NewSharedBatcher(w.write, 10, time.Second)
	expectBuildError(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		branches := stages.Route(stages.Map(in, recordString), 2, func(v string) int { return len(v) % 2 })
		return pipeline.All(b.Feed(branches[0]), b.Feed(branches[1]))
	}, "used twice in one partition's graph")
}

// A batcher belongs to the first Run that uses it: a second Run's build
// fails.
func TestSharedBatcherInTwoRunsFailsTheSecondBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		b := stages.NewSharedBatcher(w.write, 10, time.Second)
		first := sharedHarness(t, b)
		first.Assign("t", 0)
		second := sharedHarness(t, b)
		if err := second.Fake().Assign("t", 0); err == nil {
			t.Fatal("the second Run's build succeeded; want a BuildError")
		}
		err := second.Wait()
		if !strings.Contains(err.Error(), "already used by another pipeline.Run") {
			t.Fatalf("second Run returned %v, want a BuildError saying the batcher belongs to another Run", err)
		}
		if err := first.Stop(); err != nil {
			t.Fatalf("first Run: %v", err)
		}
	})
}

func recordString(_ context.Context, r sluice.Record) (string, error) {
	return string(r.Value), nil
}
