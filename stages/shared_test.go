package stages_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

func TestSharedBatcherFlushesARevokedPartitionBeforeAcknowledging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := sharedWrites(t, 100, time.Hour)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Send("t", 1, []byte("b"))
		synctest.Wait()
		h.Revoke("t", 0)
		if got := h.Committed("t", 0); got != 1 {
			t.Fatalf("revoked partition committed %d, want 1", got)
		}
		if got := w.list(); len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("batches %v, want one batch with both partitions' values", got)
		}
		if got := h.Committed("t", 1); got != 1 {
			t.Fatalf("partition 1 committed %d, want 1 (its value was in the written batch)", got)
		}
	})
}

func TestSharedBatcherNeverCommitsALostPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := sharedWrites(t, 100, time.Minute)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		h.Send("t", 1, []byte("b"))
		synctest.Wait()
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
