package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// revokes records what the revoke hook saw.
type revokes struct{ lockedList[revoke] }

// revoke is one call of the revoke hook.
type revoke struct {
	took     time.Duration
	timedOut bool
}

func (r *revokes) OnPartitionRevoked(_ sluice.TopicPartition, took time.Duration, timedOut bool) {
	r.push(revoke{took, timedOut})
}

// A slow key (every record 50 ms, all of one key in a PoolByKey) with the
// default options: the graph's edges and the Pool's queues alone hold
// thousands of records, minutes of work, but the feeder paces what the
// graph holds to what its measured rate (20 records/s) finishes in half
// the drain timeout (10 s), so a revoke drains within the drain timeout
// and every record is processed exactly once across the reassignment.
func TestASlowKeyDrainsWithinTheDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5000
		var out sink
		var hook revokes
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			slow := stages.PoolByKey(in, 8, func(sluice.Record) string { return "hot" },
				func(_ context.Context, r sluice.Record) (int64, error) {
					time.Sleep(50 * time.Millisecond)
					return r.Offset, nil
				})
			return out.each(p, slow)
		}, pipeline.WithHooks(&hook))
		assignAndSend(h, n)
		time.Sleep(time.Minute) // the rate is measured
		h.Revoke("t", 0)
		if got := hook.list(); len(got) != 1 || got[0].timedOut || got[0].took > pipeline.DefaultDrainTimeout/2+time.Second {
			t.Fatalf("revokes %+v, want one drain of about half the drain timeout (%v) at most, not timed out",
				got, pipeline.DefaultDrainTimeout/2)
		}
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, n)
		got := out.of(0)
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("processed offset %d at position %d (of %d), want every record once, in order", o, i, len(got))
			}
		}
		if len(got) != n {
			t.Fatalf("processed %d records, want %d", len(got), n)
		}
		stopClean(t, h)
	})
}

// A drain that still times out (here the rate fell: a record waits for
// longer than the drain timeout) logs the measured rate, what the graph
// held and the option to change.
func TestATimedOutDrainLogsTheRateAndWhatToChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logText
		h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
			d := 10 * time.Millisecond
			if r.Offset >= 1000 {
				d = time.Hour
			}
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, pipeline.WithDrainTimeout(4*time.Second), pipeline.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		assignAndSend(h, 2000)
		time.Sleep(10*time.Second + time.Second/2) // 1000 records at 100/s, then offset 1000 waits
		h.Revoke("t", 0)
		checkCommitted(t, h, 1000, "")
		line := logs.String()
		for _, want := range []string{"drain timed out", "pipeline.WithDrainTimeout", "rate=100", "measured completion rate of 100.0 records/s"} {
			if !strings.Contains(line, want) {
				t.Fatalf("log %q does not say %q", line, want)
			}
		}
		stopClean(t, h)
	})
}

// logText is a log destination safe for concurrent writes.
type logText struct{ lockedList[string] }

func (l *logText) Write(p []byte) (int, error) {
	l.push(string(p))
	return len(p), nil
}

// String returns everything written so far.
func (l *logText) String() string { return strings.Join(l.list(), "") }

// A stage that completes nothing until it got more input than the
// feeder's first limit (a Batch of 1000 without maxWait) is not held back
// by the pacing: the limit doubles whenever nothing completes at it.
func TestPacingNeverStarvesABatchWithoutMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if took := batchesCommitted(t, 3, 1000, 0); took > 2*time.Second {
			t.Errorf("3 batches took %v, want at most 2s (two stalls of 625ms raise the limit from 256 to 1024)", took)
		}
	})
}

// A Batch larger than the feeder's first limit (one chunk, 256 records)
// gets its first batch whole at once: the records of a new partition do
// not wait for maxWait (here an hour) nor for the stall rule (625 ms with
// the default drain timeout) before they commit.
func TestANewGraphFeedsItsBatchsFirstBatchWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if took := batchesCommitted(t, 3, 600, time.Hour); took != 0 {
			t.Errorf("3 batches of 600 took %v, want no wait", took)
		}
	})
}

// batchesCommitted runs stages.Batch(size, maxWait) on t/0, sends it
// batches*size records and waits until all are committed. It checks that
// the stage got exactly batches batches of size records, stops the
// harness cleanly, and returns how long the records took from being sent
// to being committed.
func batchesCommitted(t *testing.T, batches, size int, maxWait time.Duration) time.Duration {
	t.Helper()
	var out sink
	h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(stages.Batch(in, size, maxWait), func(_ context.Context, b []sluice.Record) error {
			out.add(p.Partition, int64(len(b)))
			return nil
		})
	})
	n := batches * size
	start := time.Now()
	assignAndSend(h, n)
	h.WaitCommitted("t", 0, int64(n))
	took := time.Since(start)
	if got, want := out.of(0), slices.Repeat([]int64{int64(size)}, batches); !slices.Equal(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	stopClean(t, h)
	return took
}

// One record in 50 is slow (2 s, all of one key in a PoolByKey), the
// others fast: the committable offset stands still for 2 s at every slow
// record, then jumps. The measured rate is about 25 records/s, so the
// feeder keeps about 250 records (5 slow ones, 10 s of work) in the
// graph, and a revoke after three minutes (the first measurements long
// past) drains within the drain timeout.
func TestASlowRecordAtTheHeadDoesNotUnpaceTheFeeder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		var hook revokes
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			key := func(r sluice.Record) string {
				if r.Offset%50 == 0 {
					return "slow"
				}
				return fmt.Sprint(r.Offset)
			}
			done := stages.PoolByKey(in, 8, key, func(ctx context.Context, r sluice.Record) (int64, error) {
				d := time.Millisecond
				if r.Offset%50 == 0 {
					d = 2 * time.Second
				}
				select {
				case <-time.After(d):
					return r.Offset, nil
				case <-ctx.Done():
					return 0, context.Cause(ctx)
				}
			})
			return stages.Discard(done)
		}, pipeline.WithHooks(&hook))
		assignAndSend(h, n)
		time.Sleep(3 * time.Minute)
		h.Revoke("t", 0)
		if got := hook.list(); len(got) != 1 || got[0].timedOut {
			t.Fatalf("revokes %+v, want one drain within the drain timeout (%v)", got, pipeline.DefaultDrainTimeout)
		}
		stopClean(t, h)
	})
}
