package txsink_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
)

// A Tee whose other branch is slow: the stored Next waits at the slow
// branch's oldest record while Written runs ahead, and a member resuming
// there writes no row twice.
func TestTeeSlowBranchHoldsNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		gate := make(chan struct{})
		tee := func(slow bool) graph {
			return func(w *txsink.Writer[int]) pipeline.Builder {
				return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					b := stages.Tee(toInt(in), 2)
					return pipeline.All(w.Write(b[0]), stages.Each(b[1], func(ctx context.Context, v int) error {
						if slow && v == 3 {
							select {
							case <-gate:
							case <-ctx.Done():
								return ctx.Err()
							}
						}
						return nil
					}))
				}
			}
		}
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 4}
		a := startGraph(t, s, o, tee(true))
		a.assign(t, values(0, 8)...)
		synctest.Wait()
		// Next is where the slow branch was at the last transaction: at
		// most 3 (the branch may not have finished 0..2 by then).
		if p := position(t, s, 0); p.Next > 3 || p.Written != 7 {
			t.Fatalf("stored %+v with offset 3 held by the slow branch; want Next 3 at most, Written 7", p)
		}
		if got := a.fake.Committed(topic, 0); got > 3 {
			t.Fatalf("group committed %d past the slow branch's record 3", got)
		}
		must(t, a.fake.Lose(topic, 0))
		close(gate)
		must(t, a.run.Stop(t))

		b := startGraph(t, s, o, tee(false))
		b.assign(t, values(0, 10)...)
		b.finish(t, s, 10)
	})
}

// A Filter before the Writer: filtered records count as finished; Next
// passes them, nothing is written twice across a restart.
func TestFilteredRecordsCountAsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		filter := func(w *txsink.Writer[int]) pipeline.Builder {
			return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return w.Write(stages.Filter(toInt(in), func(v int) bool { return v%3 != 2 }))
			}
		}
		o := txsink.Options[int]{ExactlyOnce: true, BatchSize: 2}
		a := startGraph(t, s, o, filter)
		a.assign(t, values(0, 8)...) // 0 1 [2] 3 4 [5] 6 7
		a.fake.WaitCommitted(t, topic, 0, 8)
		if p := position(t, s, 0); p.Next != 8 || p.Written != 7 {
			t.Fatalf("stored %+v; want Next 8, Written 7", p)
		}
		must(t, a.fake.Lose(topic, 0))
		must(t, a.run.Stop(t))
		b := startGraph(t, s, o, filter)
		b.assignCommitted(t, 12)
		sameInts(t, "rows", s.Rows(), []int{0, 1, 3, 4, 6, 7, 9, 10})
		must(t, b.run.Stop(t))
	})
}

// Exactly once refuses values that do not come one per record in offset
// order, naming the offset.
func TestExactlyOnceRefusesSeveralValuesPerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		twice := func(w *txsink.Writer[int]) pipeline.Builder {
			return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return w.Write(stages.FlatMap(toInt(in), func(_ context.Context, v int) ([]int, error) { return []int{v, v}, nil }))
			}
		}
		m := startGraph(t, s, txsink.Options[int]{ExactlyOnce: true}, twice)
		m.assign(t, values(0, 3)...)
		err := m.run.Wait(t)
		if err == nil || !strings.Contains(err.Error(), "offset 0 came after offset 0") {
			t.Fatalf("Run returned %v; want an error naming offset 0 twice", err)
		}
		if len(s.Rows()) != 0 {
			t.Fatalf("rows %v written; want none", s.Rows())
		}
	})
}
