package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// A partition paused by backpressure resumes through Wake and Resumable:
// the Kafka sources' poll loop (internal/rebalance Core.resume) asks
// Resumable whenever Wake fires and calls Offsets only at its commit
// interval. Values an Each kept while its stage is inside a slow call
// must not hold the budget that the paused partition needs to resume,
// as they do not hold it from a delivery (Deliver) or a saturated poll
// (Saturated).
//
// Under a budget of 40 records (resume at 30) and a partition queue of
// 8, t/1 is delivered 8 records (0 to 7), whose first call waits at a
// gate, so t/1 pauses at its queue. t/0 then gets its second chunk of
// fast calls, 32 to 63, and the call for 63 waits for t/1's record 8 (a
// function that waits for another partition's progress). The gate opens:
// t/1's 8 records complete. t/0 holds one record whose call has not
// returned and 31 whose call returned: one record is in flight, t/1 must
// resume at once, its record 8 run, and 63's call return. If the 31 are
// still counted, 32 records stay in flight (above 30), Resumable lists
// nothing, and t/1 waits for the next commit interval's Offsets.
func TestEachKeptValuesDoNotHoldAPausedPartitionsResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := sluice.TopicPartition{Topic: "t", Partition: 0}
		b := sluice.TopicPartition{Topic: "t", Partition: 1}
		const commitInterval = 5 * time.Second
		gate := make(chan struct{})
		b8 := make(chan struct{}) // closed by t/1's record 8
		var opened time.Time
		ran := make(chan time.Duration, 1) // how long after the gate opened t/1's record 8 ran
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				switch {
				case r.Partition == 1 && r.Offset == 0:
					<-gate
				case r.Partition == 1 && r.Offset == 8:
					ran <- time.Since(opened)
					close(b8)
				case r.Partition == 0 && r.Offset == 63:
					select {
					case <-b8:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
		}
		recsA, recsB := recordsOf(a, 64), recordsOf(b, 16)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{a, b}); err != nil {
				return err
			}
			g.Deliver(a, recsA[:32])
			synctest.Wait() // t/0's first chunk: fast calls
			if !g.Deliver(b, recsB[:8]) {
				t.Errorf("Deliver of 8 records to t/1 under a partition queue of 8 did not pause it")
			}
			g.Deliver(a, recsA[32:])
			synctest.Wait() // t/0: 32 to 62 returned, 63 waits for t/1's 8; t/1's 0 waits at the gate
			opened = time.Now()
			close(gate)
			// The Kafka sources' poll loop: resume on Wake, commit on the
			// interval.
			commit := time.NewTicker(commitInterval)
			defer commit.Stop()
			resumedB := false
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-g.Wake():
					for _, tp := range g.Resumable() {
						if tp == b && !resumedB {
							resumedB = true
							g.Deliver(b, recsB[8:])
						}
					}
				case <-commit.C:
					g.Offsets()
				}
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- pipeline.Run(ctx, src, build, pipeline.WithMaxInFlight(40), pipeline.WithPartitionQueue(8))
		}()
		if d := <-ran; d != 0 {
			t.Errorf("t/1 resumed and ran its record 8 %v after its paused records completed, want at once (t/0 holds 1 record whose call has not returned and 31 whose call returned; the next commit interval was %v away)", d, commitInterval)
		}
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
