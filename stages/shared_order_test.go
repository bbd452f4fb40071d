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

// Partition 1 writes [0:a 1:x], which fails, and waits to retry;
// partition 0 closes [0:b 0:c] and waits for its turn; partition 1 is
// revoked, which ends its retries and puts 0:a back. 0:a must be written
// before 0:b and 0:c.
func TestSharedBatcherWritesAPartitionsValuesInOffsetOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writes
		b := stages.NewSharedBatcher(failingWith(&w, "1:x"), 2, time.Minute, slowRetries)
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("x"))
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
		var w writes
		b := stages.NewSharedBatcher(failingWith(&w, "1:x"), 2, time.Second, slowRetries)
		h := sharedHarness(t, b)
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("a"))
		synctest.Wait()
		h.Send("t", 1, []byte("x"))
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
