package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// panicOnceAt is a completion hook that panics the first time a
// partition's next reaches at.
type panicOnceAt struct {
	at       int64
	panicked atomic.Bool
}

func (h *panicOnceAt) OnRecordsCompleted(_ sluice.TopicPartition, _ int, next int64) {
	if next == h.at && h.panicked.CompareAndSwap(false, true) {
		panic("hook exploded")
	}
}

// A completion hook that panics on a stage goroutine stops Run like a
// panic of that stage's function (sluice.Hook), also when the stage is
// completing the values it kept (Each's group of 32): Run returns the
// panic, and the values the panicking flush completed are not completed
// a second time by the stage's last flush on its way out (which would
// stop Run with ErrTicketCompleted instead and leave the stage's list out
// of the runtime's set of lists to flush).
//
// Each's first chunk (0 to 31) is fast, so its second (32 to 63) is kept
// and the stage flushes it after its 32nd value, on its own goroutine:
// the hook panics when next reaches 64. Only the stage goroutine
// completes anything (the source calls no Offsets, Saturated, Resumable
// or Polled meanwhile, and the budget has room).
func TestEachKeptValuesHookPanicDuringFlushStopsRunWithThePanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		hook := &panicOnceAt{at: 64}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { return nil }, stages.Name("each"))
		}
		recs := recordsOf(tp, 64)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recs[:32])
			synctest.Wait() // the first chunk: fast calls, done one by one
			g.Deliver(tp, recs[32:])
			<-ctx.Done()
			return nil
		})
		err := pipeline.Run(context.Background(), src, build, pipeline.WithHooks(hook),
			pipeline.WithMaxInFlight(1024), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
		var se *sluice.StageError
		var pe *sluice.PanicError
		if !errors.As(err, &se) || !errors.As(err, &pe) || pe.Value != "hook exploded" || se.Stage != "each" {
			t.Fatalf("Run = %v, want the *StageError of stage \"each\" wrapping the hook's *PanicError (\"hook exploded\")", err)
		}
		if errors.Is(err, engine.ErrTicketCompleted) {
			t.Fatalf("Run = %v: the kept values were completed a second time after the hook panicked", err)
		}
	})
}
