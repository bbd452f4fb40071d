package stages_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Each's values whose call returned hold their share of the in-flight
// budget until they complete. Under a budget of 64 records, partition
// t/0's second chunk (64 fast calls, after a fast first chunk) fills the
// budget, and the call for its last value
// (offset 127) waits for t/1's record 0 to be processed (a function that
// waits for another partition's progress, as an event-time alignment
// across partitions does). The 63 values before it returned nil: once
// they complete, t/1's record is admitted, runs, and releases t/0. Were
// they kept back until the call for 127 returned, the budget would stay
// full, t/1's record would never be admitted, and the consumer would hang
// until the shutdown's drain timeout cancelled the waiting call.
func TestEachValuesThatReturnedReleaseTheBudgetWhileACallWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 64
		waiting := int64(2*budget - 1)
		other := make(chan struct{}) // closed by t/1's record 0
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				switch {
				case r.Partition == 1:
					close(other)
				case r.Offset == waiting:
					select {
					case <-other:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
		}, pipeline.WithMaxInFlight(budget))
		h.Assign("t", 0, 1)
		h.Send("t", 0, testkit.Values(budget)...)
		h.WaitCommitted("t", 0, budget) // the first chunk: the calls are fast
		h.Send("t", 0, testkit.Values(budget)...)
		synctest.Wait() // t/0's 64 to 126 returned, 127 waits: the budget is full
		h.Send("t", 1, testkit.Values(1)...)
		h.WaitCommitted("t", 1, 1)
		h.WaitCommitted("t", 0, 2*budget)
		if err := h.Stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// The same without any dependency between partitions: a slow call (10s,
// an external call near its timeout) on t/0 after 63 fast ones must not
// keep those 63 in the budget. Under a budget of 64,
// t/1's record must run at once, not wait for that call to return before
// it is even admitted: every value but one of t/0 is done, and each
// completed as its call returned.
func TestEachSlowCallDoesNotHoldOtherPartitionsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 64
		slow := int64(2*budget - 1)
		var start time.Time
		ran := make(chan time.Duration, 1) // how long after start t/1's record ran
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				switch {
				case r.Partition == 1:
					ran <- time.Since(start)
				case r.Offset == slow:
					time.Sleep(10 * time.Second)
				}
				return nil
			})
		}, pipeline.WithMaxInFlight(budget))
		h.Assign("t", 0, 1)
		h.Send("t", 0, testkit.Values(budget)...)
		h.WaitCommitted("t", 0, budget) // the first chunk: the calls are fast
		h.Send("t", 0, testkit.Values(budget)...)
		synctest.Wait() // t/0's 64 to 126 returned, 127 sleeps: the budget is full
		start = time.Now()
		h.Send("t", 1, testkit.Values(1)...)
		if d := <-ran; d != 0 {
			t.Errorf("t/1's record ran %v after it was sent, want at once (t/0 has one value in progress, 63 done)", d)
		}
		h.WaitCommitted("t", 0, 2*budget)
		h.WaitCommitted("t", 1, 1)
		if err := h.Stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
