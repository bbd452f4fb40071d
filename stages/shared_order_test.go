package stages_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

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
