package pipeline_test

import (
	"context"
	"errors"
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

func TestRevokeDrainsInFlightWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out sink
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			slow := stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) {
				time.Sleep(time.Second) // in-flight work that finishes within the drain timeout
				return r.Offset, nil
			})
			return out.each(p, slow)
		})
		assignAndSend(h, 3)
		synctest.Wait() // the first record is in the Map
		h.Revoke("t", 0)
		checkCommitted(t, h, 3, "after a graceful revoke")
		if got := out.of(0); !slices.Equal(got, []int64{0, 1, 2}) {
			t.Fatalf("processed %v, want [0 1 2]", got)
		}
	})
}

func TestRevokeAfterDrainTimeoutCommitsOnlyWhatFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(4)
		var cause error
		h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
			err := g.wait(ctx, r.Offset)
			if err != nil {
				cause = err
			}
			return err
		}, pipeline.WithDrainTimeout(3*time.Second))
		assignAndSend(h, 10)
		synctest.Wait()
		start := time.Now()
		h.Revoke("t", 0)
		if waited := time.Since(start); waited != 3*time.Second {
			t.Fatalf("revoke returned after %v, want the 3s drain timeout", waited)
		}
		checkCommitted(t, h, 4, "(offset 4 never finished)")
		if !errors.Is(cause, sluice.ErrDrainTimeout) {
			t.Fatalf("stage saw cause %v, want ErrDrainTimeout", cause)
		}
		// Re-assigning resumes from the commit: offset 4 is delivered again.
		g.open(4)
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 10)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v (errors after a drain timeout must not stop Run)", err)
		}
	})
}

func TestLostPartitionCommitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(0)
		var mu sync.Mutex
		var causes []error
		closed := 0
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { closed++; return nil })
			slow := stages.Pool(in, 4, func(ctx context.Context, r sluice.Record) (int64, error) {
				if err := g.wait(ctx, r.Offset); err != nil {
					mu.Lock()
					causes = append(causes, err)
					mu.Unlock()
					return 0, err
				}
				return r.Offset, nil
			})
			return stages.Discard(slow)
		})
		assignAndSend(h, 20)
		synctest.Wait()
		h.Lose("t", 0)
		checkCommitted(t, h, -1, "for a lost partition")
		if len(causes) != 1 || !errors.Is(causes[0], sluice.ErrLost) {
			t.Fatalf("blocked call saw %v, want ErrLost", causes)
		}
		if closed != 1 {
			t.Fatalf("OnClose ran %d times, want 1", closed)
		}
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
}

func TestShutdownDrainsAndCommitsEveryPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var order []string
		var mu sync.Mutex
		log := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { log("close-first-registered"); return nil })
			p.OnClose(func(context.Context) error {
				if p.Context().Err() != nil {
					t.Errorf("context already cancelled in OnClose after a clean drain")
				}
				log("close-second-registered")
				return nil
			})
			batches := stages.Batch(in, 1000, time.Hour)
			return stages.Each(batches, func(_ context.Context, b []sluice.Record) error {
				log("batch")
				return nil
			})
		})
		assignAndSend(h, 7)
		synctest.Wait()
		checkCommitted(t, h, -1, "before the batch flushed")
		stopClean(t, h)
		checkCommitted(t, h, 7, "after shutdown")
		want := []string{"batch", "close-second-registered", "close-first-registered"}
		if !slices.Equal(order, want) {
			t.Fatalf("order %v, want %v", order, want)
		}
	})
}

func TestBatchFlushesOnTimeoutAndSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sizes []int
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			batches := stages.Batch(in, 4, 2*time.Second)
			return stages.Each(batches, func(_ context.Context, b []sluice.Record) error {
				mu.Lock()
				sizes = append(sizes, len(b))
				mu.Unlock()
				return nil
			})
		})
		assignAndSend(h, 6)
		synctest.Wait()
		checkCommitted(t, h, 4, "after a full batch")
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		checkCommitted(t, h, 4, "before maxWait")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		checkCommitted(t, h, 6, "after maxWait")
		if !slices.Equal(sizes, []int{4, 2}) {
			t.Fatalf("batch sizes %v, want [4 2]", sizes)
		}
	})
}

// BatchByWeight closes a batch before the value that would make it
// heavier than the limit, sends a value heavier than the limit alone, and
// flushes the rest after maxWait.
func TestBatchByWeightClosesABatchAtItsWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sizes []int
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			batches := stages.BatchByWeight(in, 10, time.Second,
				func(r sluice.Record) int { return len(r.Value) })
			return stages.Each(batches, func(_ context.Context, b []sluice.Record) error {
				sizes = append(sizes, len(b))
				return nil
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("aaaa"), []byte("bbbb"), []byte("cccc"), []byte("dddddddddddddd"), []byte("e"))
		h.WaitCommitted("t", 0, 5)
		// 4+4 fits, +4 would exceed 10; 4 alone; 14 is heavier than the
		// limit and goes alone; 1 is flushed by time.
		if !slices.Equal(sizes, []int{2, 1, 1, 1}) {
			t.Fatalf("batch sizes %v, want [2 1 1 1]", sizes)
		}
	})
}

func TestBackpressurePausesAFullPartition(t *testing.T) {
	pausesAtThePartitionQueue(t)
}

// pausesAtThePartitionQueue runs a stage blocked at offset 0 with a
// partition queue of 100 records and opts, sends 1000 records to t/0, and
// checks that the partition paused once 100 were held: the fake delivers
// 64 records at a time, so two deliveries, 128 records. Once the stage
// runs again, every record is committed.
func pausesAtThePartitionQueue(t *testing.T, opts ...pipeline.Option) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		g := newGate(0)
		h := eachHarness(t, g.waitRecord, append(opts, pipeline.WithPartitionQueue(100))...)
		assignAndSend(h, 1000)
		synctest.Wait()
		if got := h.Fake().Delivered("t", 0); got != 128 {
			t.Fatalf("delivered %d records while offset 0 was blocked, want 128 (paused at the partition queue)", got)
		}
		g.open(0)
		h.WaitCommitted("t", 0, 1000)
	})
}

func TestGlobalInFlightLimitBoundsAllPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := eachHarness(t, func(ctx context.Context, r sluice.Record) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, pipeline.WithMaxInFlight(200))
		parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
		h.Assign("t", parts...)
		for _, p := range parts {
			h.Send("t", p, testkit.Values(500)...)
		}
		synctest.Wait()
		total := 0
		for _, p := range parts {
			total += h.Fake().Delivered("t", p)
		}
		// At most one delivery (64) per partition beyond the limit.
		if total < 200 || total > 200+64*len(parts) {
			t.Fatalf("%d records delivered across partitions with a limit of 200", total)
		}
		close(release)
		for _, p := range parts {
			h.WaitCommitted("t", p, 500)
		}
	})
}
