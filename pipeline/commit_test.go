package pipeline_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func TestPoolRandomLatencyCommitsContiguousPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 500
		g := newGate(137)
		var out sink
		rng := rand.New(rand.NewPCG(1, 2))
		delays := make([]time.Duration, n)
		for i := range delays {
			delays[i] = time.Duration(rng.IntN(50)) * time.Millisecond
		}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			offs := stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (int64, error) {
				time.Sleep(delays[r.Offset])
				return r.Offset, g.wait(ctx, r.Offset)
			})
			return out.each(p, offs)
		})
		assignAndSend(h, n)
		time.Sleep(time.Minute) // every unblocked delay has passed
		synctest.Wait()
		if got := h.Committed("t", 0); got != 137 {
			t.Fatalf("committed %d while offset 137 is in flight, want exactly 137", got)
		}
		g.open(137)
		h.WaitCommitted("t", 0, n)
		synctest.Wait()
		if got := h.Committed("t", 0); got != n {
			t.Fatalf("committed %d, want %d", got, n)
		}
		got := out.of(0)
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("result %d is offset %d: Pool broke input order", i, o)
			}
		}
		if len(got) != n {
			t.Fatalf("%d results, want %d", len(got), n)
		}
	})
}

func TestPoolByKeyNeverOverlapsAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		running := map[string]int{}
		var maxPar int
		var mu = make(chan struct{}, 1)
		lastSeen := map[string]int64{}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			done := stages.PoolByKey(in, 6, func(r sluice.Record) string { return string(r.Key) }, func(ctx context.Context, r sluice.Record) (int64, error) {
				k := string(r.Key)
				mu <- struct{}{}
				running[k]++
				if running[k] > 1 {
					t.Errorf("key %s runs twice at once", k)
				}
				if last, ok := lastSeen[k]; ok && last > r.Offset {
					t.Errorf("key %s: offset %d ran after %d", k, r.Offset, last)
				}
				lastSeen[k] = r.Offset
				cur := 0
				for _, c := range running {
					cur += c
				}
				maxPar = max(maxPar, cur)
				<-mu
				time.Sleep(time.Duration(r.Offset%7) * time.Millisecond)
				mu <- struct{}{}
				running[k]--
				<-mu
				return r.Offset, nil
			})
			return stages.Discard(done)
		})
		recs := make([]sluice.Record, n)
		for i := range recs {
			recs[i] = sluice.Record{Topic: "t", Offset: int64(i), Key: []byte{byte('a' + i%5)}}
		}
		h.Assign("t", 0)
		h.SendRecords(recs...)
		h.WaitCommitted("t", 0, n)
		if maxPar < 2 {
			t.Fatalf("at most %d keys ran at once; PoolByKey should run different keys in parallel", maxPar)
		}
	})
}

func TestFilteredTailIsCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out sink
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			kept := stages.Filter(in, func(r sluice.Record) bool { return r.Offset < 4 })
			return stages.Each(kept, func(_ context.Context, r sluice.Record) error { out.add(p.Partition, r.Offset); return nil })
		})
		assignAndSend(h, 10)
		h.WaitCommitted("t", 0, 10)
		synctest.Wait()
		checkCommitted(t, h, 10, "")
		if got := out.of(0); len(got) != 4 {
			t.Fatalf("kept %v, want offsets 0..3", got)
		}
	})
}

func TestOffsetGapsCommitPastTheLastRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(in)
		})
		h.Assign("t", 0)
		h.SendRecords(
			sluice.Record{Topic: "t", Offset: 3},
			sluice.Record{Topic: "t", Offset: 7},
			sluice.Record{Topic: "t", Offset: 8},
		)
		h.WaitCommitted("t", 0, 9)
		synctest.Wait()
		checkCommitted(t, h, 9, "")
	})
}

func TestFlatMapCommitsWhenAllOutputsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Offset 0 expands to 3 values, offset 1 to none, offset 2 to 2;
		// the second value of offset 2 is held at the End.
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			parts := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
				switch r.Offset {
				case 0:
					return []string{"0a", "0b", "0c"}, nil
				case 2:
					return []string{"2a", "2b"}, nil
				}
				return nil, nil
			})
			return stages.Each(parts, func(ctx context.Context, v string) error {
				if v == "2b" {
					<-release
				}
				return nil
			})
		})
		commitsHeldUntilRelease(t, h, 3, 2, "with an output of offset 2 pending", release)
	})
}

func TestRouteCommitsWhenTheBranchFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var evens, odds sink
		slow := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			branches := stages.Route(in, 2, func(r sluice.Record) int { return int(r.Offset % 2) })
			return pipeline.All(
				stages.Each(branches[0], func(_ context.Context, r sluice.Record) error { evens.add(0, r.Offset); return nil }),
				stages.Each(branches[1], func(_ context.Context, r sluice.Record) error {
					if r.Offset == 5 {
						<-slow
					}
					odds.add(0, r.Offset)
					return nil
				}),
			)
		})
		commitsHeldUntilRelease(t, h, 10, 5, "while odd offset 5 is in its branch", slow)
		if e, o := evens.of(0), odds.of(0); len(e) != 5 || len(o) != 5 {
			t.Fatalf("evens %v odds %v", e, o)
		}
	})
}

func TestUnbatchCommitsABatchWhenAllItsElementsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			groups := stages.Batch(in, 3, 0)
			empty := stages.Map(groups, func(_ context.Context, b []sluice.Record) ([]sluice.Record, error) {
				if b[0].Offset == 3 {
					return nil, nil // an empty batch completes at once
				}
				return b, nil
			})
			return stages.Each(stages.Unbatch(empty), ignoringCtx(7, hold))
		})
		// Batches [0 1 2], [3 4 5] (emptied) and [6 7 8], whose element 7
		// is held: the third batch's records all wait.
		commitsHeldUntilRelease(t, h, 9, 6, "while element 7 of batch [6 7 8] is held", hold)
	})
}

// commitsHeldUntilRelease sends n records to t/0 of h, whose graph holds
// a record until release is closed, and checks that the commit reaches
// held and stays exactly there once every goroutine of the bubble is
// blocked (what says why); it then closes release and waits until all n
// records are committed.
func commitsHeldUntilRelease(t *testing.T, h *testkit.Harness, n int, held int64, what string, release chan struct{}) {
	t.Helper()
	assignAndSend(h, n)
	h.WaitCommitted("t", 0, held)
	synctest.Wait()
	checkCommitted(t, h, held, what)
	close(release)
	h.WaitCommitted("t", 0, int64(n))
}

func TestByteBudgetPausesPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(0)
		h := eachHarness(t, g.waitRecord, pipeline.WithMaxInFlightBytes(1000))
		big := make([][]byte, 200)
		for i := range big {
			big[i] = make([]byte, 100)
		}
		h.Assign("t", 0)
		h.Send("t", 0, big...)
		synctest.Wait()
		// 64 records (6,400 bytes) in the first delivery exceed 1,000 bytes.
		if got := h.Fake().Delivered("t", 0); got != 64 {
			t.Fatalf("delivered %d records, want 64 (one delivery, then paused on bytes)", got)
		}
		g.open(0)
		h.WaitCommitted("t", 0, 200)
	})
}
