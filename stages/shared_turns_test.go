package stages_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/stages"
)

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
