package stages_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A write that panics stops Run with a StageError naming the position of
// the batch's value and carrying the panic; the other partition, waiting
// for its turn meanwhile, still writes its batch, so shutdown needs no
// drain timeout.
func TestSharedBatcherWritePanicStopsRunWithThePosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		write := func(ctx context.Context, batch []string) error {
			if batch[0] == "0:a" {
				time.Sleep(time.Second) // partition 1 waits for its turn
				panic("driver bug")
			}
			return w.write(ctx, batch)
		}
		b := stages.NewSharedBatcher(write, 1, time.Minute, stages.Name("insert"))
		h := sharedHarness(t, b, pipeline.WithDrainTimeout(200*time.Millisecond))
		h.Assign("t", 0, 1)
		start := time.Now()
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("b"))
		err := h.Wait()
		var se *sluice.StageError
		var pe *sluice.PanicError
		if !errors.As(err, &se) || !errors.As(err, &pe) || se.Stage != "insert" || se.Partition != 0 || se.Offset != 0 {
			t.Fatalf("Run returned %v, want a StageError of insert at t/0 offset 0 with a PanicError", err)
		}
		if pe.Value != "driver bug" {
			t.Errorf("panic value %v, want driver bug", pe.Value)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Run took %v to stop, want 1s (the panicking write; no drain timeout)", took)
		}
		if c0, c1 := h.Committed("t", 0), h.Committed("t", 1); c0 != -1 || c1 != 1 {
			t.Errorf("committed %d and %d, want -1 (panicked) and 1 (written)", c0, c1)
		}
	})
}

// callRecorder records stage calls and stuck values.
type callRecorder struct {
	mu     sync.Mutex
	calls  []string
	stucks []string
}

func (r *callRecorder) OnStageCall(stage string, tp sluice.TopicPartition, d time.Duration, err error) {
	if stage != "insert" {
		return // the Map before it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s@%s/%d:%v:%v", stage, tp.Topic, tp.Partition, d, err))
}

func (r *callRecorder) OnStuck(stage string, tp sluice.TopicPartition, offset int64, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stucks = append(r.stucks, fmt.Sprintf("%s@%s/%d:%d", stage, tp.Topic, tp.Partition, offset))
}

func (r *callRecorder) lists() (calls, stucks []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls), slices.Clone(r.stucks)
}

// Writes are stage function calls like any other: observers see them
// timed, and the stuck detector names the value stuck in a slow write
// (here a value of partition 0 written on partition 1's goroutine).
func TestSharedBatcherWritesAreTimedAndWatchedForStuckValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		write := func(ctx context.Context, batch []string) error {
			time.Sleep(10 * time.Second)
			return w.write(ctx, batch)
		}
		// "heavy" weighs a whole batch: adding it closes the batch holding
		// 0:a, so partition 1's goroutine writes partition 0's value.
		weight := func(v string) int {
			if strings.HasSuffix(v, "heavy") {
				return 2
			}
			return 1
		}
		obs := &callRecorder{}
		b := stages.NewSharedBatcherByWeight(write, 2, time.Minute, weight, stages.Name("insert"))
		h := sharedHarness(t, b, pipeline.WithStuckThreshold(4*time.Second), pipeline.WithHooks(obs))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("heavy"))
		h.WaitCommitted("t", 0, 1)
		h.WaitCommitted("t", 1, 1) // [1:heavy], a batch of its own, written next
		calls, stucks := obs.lists()
		if want := []string{"insert@t/1:10s:<nil>", "insert@t/1:10s:<nil>"}; !slices.Equal(calls, want) {
			t.Errorf("stage calls %v, want %v", calls, want)
		}
		if want := []string{"insert@t/0:0", "insert@t/1:0"}; !slices.Equal(stucks, want) {
			t.Errorf("stuck values %v, want %v", stucks, want)
		}
	})
}

// A write that panics while the partition running it is being revoked is
// a failure, not an interruption: it stops Run at once with the position
// of the batch's first value, instead of going back to the queue to be
// written (and panic) again on another partition.
func TestSharedBatcherWritePanicDuringARevokeIsNotWrittenAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		write := func(ctx context.Context, batch []string) error {
			calls.Add(1)
			<-release
			panic("driver bug")
		}
		b := stages.NewSharedBatcher(write, 2, time.Minute, stages.Name("insert"))
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("b")) // partition 1 writes [0:a 1:b]
		synctest.Wait()
		revoked := make(chan struct{})
		go func() {
			defer close(revoked)
			h.Revoke("t", 1)
		}()
		synctest.Wait()
		close(release)
		<-revoked
		err := h.Wait()
		var se *sluice.StageError
		var pe *sluice.PanicError
		if !errors.As(err, &se) || !errors.As(err, &pe) || se.Partition != 0 || se.Offset != 0 {
			t.Fatalf("Run returned %v, want a StageError at t/0 offset 0 with a PanicError", err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the panicking batch was written %d times, want 1", n)
		}
	})
}

// failingWith returns a write that fails (transiently) every batch holding
// bad, and records the others in w.
func failingWith(w *writes, bad string) func(context.Context, []string) error {
	return func(ctx context.Context, batch []string) error {
		if slices.Contains(batch, bad) {
			return errors.New("connection reset")
		}
		return w.write(ctx, batch)
	}
}

// slowRetries keeps a failed write waiting 10s before each retry.
var slowRetries = stages.Retry(sluice.RetryPolicy{Attempts: 10, Initial: 10 * time.Second, Max: 10 * time.Second})

// failingOnX returns the writes of a SharedBatcher of size 2 and maxWait
// whose write of 1:x fails (slowRetries), and its Harness, once t/0 and
// t/1 are assigned, 0:a was taken, and 1:x was sent.
func failingOnX(t *testing.T, maxWait time.Duration) (*writes, *testkit.Harness) {
	t.Helper()
	w := &writes{}
	h := sharedHarness(t, stages.NewSharedBatcher(failingWith(w, "1:x"), 2, maxWait, slowRetries))
	h.Assign("t", 0, 1)
	h.Send("t", 0, []byte("a"))
	synctest.Wait()
	h.Send("t", 1, []byte("x"))
	return w, h
}

// Partition 1 writes [0:a 1:x], which fails, and waits to retry;
// partition 0 closes [0:b 0:c] and waits for its turn; partition 1 is
// revoked, which ends its retries and puts 0:a back. 0:a must be written
// before 0:b and 0:c.
func TestSharedBatcherWritesAPartitionsValuesInOffsetOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := failingOnX(t, time.Minute)
		synctest.Wait()
		h.Send("t", 0, []byte("b"), []byte("c"))
		synctest.Wait()
		h.Revoke("t", 1)
		h.WaitCommitted("t", 0, 3)
		if got, want := w.list(), [][]string{{"0:a"}, {"0:b", "0:c"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("batches %v, want %v", got, want)
		}
		if got := h.Committed("t", 1); got != -1 {
			t.Errorf("revoked partition 1 committed %d, want -1 (its value was never written)", got)
		}
	})
}

// Partition 1's write of [0:a 1:x] fails and waits to retry, past 0:a's
// maxWait; partition 1 is revoked, which ends its retries and puts 0:a
// back. Nothing more arrives, and yet 0:a is written, at once.
func TestSharedBatcherWritesValuesPutBackOnAnIdleTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, h := failingOnX(t, time.Second)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		h.Revoke("t", 1)
		start := time.Now()
		h.WaitCommitted("t", 0, 1)
		if took := time.Since(start); took != 0 {
			t.Errorf("0:a committed %v after it was put back, want at once", took)
		}
		if got, want := w.list(), [][]string{{"0:a"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("batches %v, want %v", got, want)
		}
	})
}

// Two partitions fill one-value batches while the write sleeps: the
// partition waiting for its turn must be durably blocked (not on a
// sync.Mutex), so that the fake clock advances and both writes finish, one
// after the other.
func TestSharedBatcherWaitsForItsTurnUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		slow := func(ctx context.Context, batch []string) error {
			time.Sleep(time.Second)
			return w.write(ctx, batch)
		}
		b := stages.NewSharedBatcher(slow, 1, time.Minute)
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		start := time.Now()
		h.Send("t", 0, []byte("a"))
		h.Send("t", 1, []byte("b"))
		h.WaitCommitted("t", 0, 1)
		h.WaitCommitted("t", 1, 1)
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("both writes took %v, want 2s (one write of 1s at a time)", took)
		}
		got := w.list()
		slices.SortFunc(got, func(a, b []string) int { return slices.Compare(a, b) })
		if want := [][]string{{"0:a"}, {"1:b"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("batches %v, want %v", got, want)
		}
	})
}
