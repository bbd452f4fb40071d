package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

var errFlaky = errors.New("connection refused")

func TestTransientErrorsAreRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
			if a.call(r.Offset) <= 3 && r.Offset == 1 {
				return errFlaky
			}
			return nil
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 5, Initial: time.Second, Max: 3 * time.Second}))
		assignAndSend(h, 3)
		h.WaitCommitted("t", 0, 3)
		calls := a.of(1)
		if len(calls) != 4 {
			t.Fatalf("offset 1 was called %d times, want 4 (3 failures, 1 success)", len(calls))
		}
		// Delays double from 1s and are capped at 3s, each jittered into
		// [d/2, d].
		for i, bound := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
			if d := calls[i+1].Sub(calls[i]); d < bound/2 || d > bound {
				t.Errorf("retry %d came after %v, want within [%v, %v]", i+1, d, bound/2, bound)
			}
		}
	})
}

func TestExhaustedRetriesStopRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				a.call(r.Offset)
				if r.Offset == 2 {
					return errFlaky
				}
				return nil
			}, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Millisecond}))
		})
		assignAndSend(h, 5)
		if err := h.Wait(); !errors.Is(err, errFlaky) {
			t.Fatalf("Run returned %v, want %v", err, errFlaky)
		}
		if n := len(a.of(2)); n != 3 {
			t.Fatalf("offset 2 called %d times, want 3 (the stage's own policy)", n)
		}
		checkCommitted(t, h, 2, "")
	})
}

func TestPermanentInvalidAndPanicsAreNotRetried(t *testing.T) {
	cases := map[string]error{
		"permanent": sluice.Permanent(errors.New("schema mismatch")),
		"invalid":   sluice.Invalid(errors.New("bad json")),
	}
	for name, failure := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a attempts
				h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
					a.call(r.Offset)
					return failure
				})
				assignAndSend(h, 1)
				if err := h.Wait(); err == nil {
					t.Fatal("Run did not stop")
				}
				if n := len(a.of(0)); n != 1 {
					t.Fatalf("called %d times, want 1", n)
				}
			})
		})
	}
}

func TestRevokeInterruptsARetryAndLeavesTheRecordUncommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
			a.call(r.Offset)
			if r.Partition == 0 && r.Offset == 1 {
				return errFlaky // the database stays down
			}
			return nil
		}, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 100, Initial: time.Minute, Max: time.Hour}))
		h.Assign("t", 0, 1)
		h.Send("t", 0, testkit.Values(3)...)
		synctest.Wait() // offset 1 waits in its first backoff
		h.Send("t", 1, testkit.Values(4)...)
		h.WaitCommitted("t", 1, 4) // other partitions go on meanwhile
		start := time.Now()
		h.Revoke("t", 0)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("revoke waited %v for a backoff; it must interrupt it", waited)
		}
		checkCommitted(t, h, 1, "(offset 1 never succeeded)")
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v (an interrupted retry must not stop Run)", err)
		}
	})
}

func TestDeadLetterDeliveryIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a attempts
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse))
		}, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
			if a.call(dl.Record.Offset) == 1 {
				return errFlaky
			}
			return nil
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"), []byte("2"))
		h.WaitCommitted("t", 0, 3)
		if n := len(a.of(1)); n != 2 {
			t.Fatalf("dead letter attempted %d times, want 2", n)
		}
	})
}

// stuckRecorder records Stuck events.
type stuckRecorder struct{ lockedList[string] }

func (s *stuckRecorder) OnStuck(stage string, tp sluice.TopicPartition, offset int64, since time.Duration) {
	s.push(fmt.Sprintf("%s@%s/%d:%d", stage, tp.Topic, tp.Partition, offset))
}

func TestStuckDetectorReportsAValueOnceWithItsPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(3)
		obs := &stuckRecorder{}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			slow := stages.Pool(in, 2, func(ctx context.Context, r sluice.Record) (int64, error) {
				return r.Offset, g.wait(ctx, r.Offset)
			}, stages.Name("enrich"))
			return stages.Discard(slow)
		}, pipeline.WithStuckThreshold(10*time.Second), pipeline.WithHooks(obs))
		assignAndSend(h, 6)
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if ev := obs.list(); len(ev) != 0 {
			t.Fatalf("reported %v before the threshold", ev)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if ev := obs.list(); len(ev) != 1 || ev[0] != "enrich@t/0:3" {
			t.Fatalf("stuck events %v, want exactly [enrich@t/0:3]", ev)
		}
		g.open(3)
		h.WaitCommitted("t", 0, 6)
	})
}
