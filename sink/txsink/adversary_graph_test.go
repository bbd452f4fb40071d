package txsink_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// startGraph is one exactly-once life with its own graph.
func startGraph(t *testing.T, s *txsinktest.MemStore[int], o txsink.Options[int], build func(w *txsink.Writer[int]) pipeline.Builder, opts ...pipeline.Option) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	o.ExactlyOnce = true
	w := txsink.New[int](s, o)
	f := testkit.NewFake()
	f.UseOffsetStore(w, group)
	return f, testkit.Start(t, f, build(w), opts...)
}

// A Tee whose other branch is slow: the stored Next waits at the slow
// branch's oldest record while Written runs ahead, and a member resuming
// there writes no row twice.
func TestAdversaryTeeSlowBranchHoldsNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		gate := make(chan struct{})
		build := func(slow bool) func(w *txsink.Writer[int]) pipeline.Builder {
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
		f, r := startGraph(t, s, txsink.Options[int]{BatchSize: 4}, build(true))
		must(t, f.Send(topic, 0, values(0, 8)...))
		must(t, f.Assign(topic, 0))
		synctest.Wait()
		// Next is where the slow branch was at the last transaction: at
		// most 3 (the branch may not have finished 0..2 by then).
		if p := position(t, s, 0); p.Next > 3 || p.Written != 7 {
			t.Fatalf("stored %+v with offset 3 held by the slow branch; want Next 3 at most, Written 7", p)
		}
		if got := f.Committed(topic, 0); got > 3 {
			t.Fatalf("group committed %d past the slow branch's record 3", got)
		}
		must(t, f.Lose(topic, 0))
		close(gate)
		must(t, r.Stop(t))

		f2, r2 := startGraph(t, s, txsink.Options[int]{BatchSize: 4}, build(false))
		must(t, f2.Send(topic, 0, values(0, 10)...))
		must(t, f2.Assign(topic, 0))
		f2.WaitCommitted(t, topic, 0, 10)
		sameInts(t, "rows", s.Rows(), seq(0, 10))
		must(t, r2.Stop(t))
	})
}

// A Filter before the Writer: filtered records count as finished; Next
// passes them, nothing is written twice across a restart.
func TestAdversaryFilterBeforeWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		build := func(w *txsink.Writer[int]) pipeline.Builder {
			return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return w.Write(stages.Filter(toInt(in), func(v int) bool { return v%3 != 2 }))
			}
		}
		f, r := startGraph(t, s, txsink.Options[int]{BatchSize: 2}, build)
		must(t, f.Send(topic, 0, values(0, 8)...)) // 0 1 [2] 3 4 [5] 6 7
		must(t, f.Assign(topic, 0))
		f.WaitCommitted(t, topic, 0, 8)
		if p := position(t, s, 0); p.Next != 8 || p.Written != 7 {
			t.Fatalf("stored %+v; want Next 8, Written 7", p)
		}
		must(t, f.Lose(topic, 0))
		must(t, r.Stop(t))
		f2, r2 := startGraph(t, s, txsink.Options[int]{BatchSize: 2}, build)
		must(t, f2.Send(topic, 0, values(0, 12)...))
		must(t, f2.Assign(topic, 0))
		f2.WaitCommitted(t, topic, 0, 12)
		sameInts(t, "rows", s.Rows(), []int{0, 1, 3, 4, 6, 7, 9, 10})
		must(t, r2.Stop(t))
	})
}

// Refused values first, last, and all of a batch: each dead-lettered
// once, the others written once, Next exact after each batch.
func TestAdversaryRefusedInEveryPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		dl := testkit.NewDeadLetters()
		a := advStart(t, s, txsink.Options[int]{BatchSize: 3}, dl,
			bs("-0", "1", "2" /**/, "3", "4", "-5" /**/, "-6", "-7", "-8" /**/, "9"))
		a.f.WaitCommitted(t, topic, 0, 9)
		linger(t)
		a.f.WaitCommitted(t, topic, 0, 10)
		sameInts(t, "rows", s.Rows(), []int{0, 1, 2, 3, 4, 9}) // "-0" is 0: accepted
		want := []int64{5, 6, 7, 8}
		if got := dl.Offsets(topic, 0); len(got) != len(want) {
			t.Fatalf("dead letters %v; want %v", got, want)
		}
		if p := position(t, s, 0); p.Next != 10 || p.Written != 9 || len(p.Invalid) != 0 {
			t.Fatalf("stored %+v; want Next 10, Written 9, no Invalid", p)
		}
		must(t, a.r.Stop(t))
	})
}

// BatchBytes with values heavier than the cap: one value per
// transaction, none lost.
func TestAdversaryBatchBytesHugeValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		o := txsink.Options[int]{BatchSize: 100, BatchBytes: 10, Weigh: func(v int) int { return v }}
		a := advStart(t, s, o, testkit.NewDeadLetters(), bs("50", "1", "2", "60", "3", "70"))
		linger(t)
		a.f.WaitCommitted(t, topic, 0, 6)
		sameInts(t, "rows", s.Rows(), []int{50, 1, 2, 60, 3, 70})
		if got := s.Commits(); got != 5 {
			t.Fatalf("%d transactions; want 5 ([50] [1 2] [60] [3] [70])", got)
		}
		must(t, a.r.Stop(t))
	})
}

// Offsets with gaps (a compacted log): Next and Written are real offsets
// and a restart inside a gap resumes at the next record.
func TestAdversaryCompactedOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		recs := func() []sluice.Record {
			var out []sluice.Record
			for _, off := range []int64{3, 7, 8, 20, 21, 40} {
				out = append(out, sluice.Record{Topic: topic, Offset: off, Value: []byte(strconv.FormatInt(off, 10))})
			}
			return out
		}
		o := txsink.Options[int]{BatchSize: 2}
		a := advStart(t, s, o, testkit.NewDeadLetters(), nil)
		must(t, a.f.SendRecords(recs()[:4]...))
		a.f.WaitCommitted(t, topic, 0, 21)
		if p := position(t, s, 0); p.Next != 21 || p.Written != 20 {
			t.Fatalf("stored %+v; want Next 21, Written 20", p)
		}
		must(t, a.f.Lose(topic, 0))
		must(t, a.r.Stop(t))
		b := advStart(t, s, o, testkit.NewDeadLetters(), nil)
		must(t, b.f.SendRecords(recs()...))
		b.f.WaitCommitted(t, topic, 0, 41)
		sameInts(t, "rows", s.Rows(), []int{3, 7, 8, 20, 21, 40})
		must(t, b.r.Stop(t))
	})
}

// Transient errors that outlast the retry policy stop Run with the
// error; nothing of the batch is committed anywhere, and the next life
// writes each row once.
func TestAdversaryTransientErrorsExhaustRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		down := errors.New("connection refused")
		s.FailCommits(down, down, down)
		o := txsink.Options[int]{BatchSize: 4}
		a := advStart(t, s, o, testkit.NewDeadLetters(), values(0, 4),
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 3, Initial: 1, Max: 1}))
		if err := a.r.Wait(t); !errors.Is(err, down) {
			t.Fatalf("Run returned %v; want the store's error", err)
		}
		if got, p := a.f.Committed(topic, 0), position(t, s, 0); got != -1 || p.Next != -1 || len(s.Rows()) != 0 {
			t.Fatalf("after the failure: group %d, store %+v, rows %v; want nothing", got, p, s.Rows())
		}
		b := advStart(t, s, o, testkit.NewDeadLetters(), values(0, 4))
		b.f.WaitCommitted(t, topic, 0, 4)
		sameInts(t, "rows", s.Rows(), seq(0, 4))
		must(t, b.r.Stop(t))
	})
}

// Begin failing (at the batch, and again while isolating a refused
// value) is transient: retried, no nil transaction used.
func TestAdversaryBeginFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		s.Refuse = refuseNegative
		busy := errors.New("pool exhausted")
		s.FailBegins(busy, nil, busy) // the batch's Begin, then the isolation's
		dl := testkit.NewDeadLetters()
		a := advStart(t, s, txsink.Options[int]{BatchSize: 3}, dl, bs("0", "-1", "2"))
		linger(t)
		a.f.WaitCommitted(t, topic, 0, 3)
		sameInts(t, "rows", s.Rows(), []int{0, 2})
		if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 1 {
			t.Fatalf("dead letters %v; want [1]", got)
		}
		must(t, a.r.Stop(t))
	})
}
