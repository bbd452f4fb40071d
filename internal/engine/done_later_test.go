package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/saturation"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// keptRun runs Each under a budget of 32 records on t/0: a first
// delivery of 32 fast calls (records 0 to 31), then a second one (32 to
// 63) whose call for 63 waits at a gate. Each's second chunk follows a
// fast one, so the values 32 to 62 are kept by the stage (DoneLater)
// while 63's call waits, and the 32 records fill the budget. check runs
// on the poll goroutine then, with the group; the gate opens after it.
func keptRun(t *testing.T, check func(g sluice.Group)) {
	t.Helper()
	if err := keptRunErr(t, check); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// keptRunErr is keptRun returning Run's error.
func keptRunErr(t *testing.T, check func(g sluice.Group)) (runErr error) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		const budget = 32
		gate, checked := make(chan struct{}), make(chan struct{})
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == 2*budget-1 {
					<-gate
				}
				return nil
			})
		}
		recs := recordsOf(tp, 2*budget)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recs[:budget])
			synctest.Wait()
			if got, want := g.Offsets(), []sluice.Offset{{TopicPartition: tp, Next: budget}}; !slices.Equal(got, want) {
				t.Errorf("after the first delivery Offsets() = %v, want %v", got, want)
			}
			g.Deliver(tp, recs[budget:])
			synctest.Wait() // 32 to 62 returned, 63 waits
			check(g)
			close(gate)
			close(checked)
			<-ctx.Done()
			g.Shutdown()
			return nil
		})
		opts := []pipeline.Option{pipeline.WithMaxInFlight(budget), pipeline.WithDrainTimeout(4 * time.Second),
			pipeline.WithLogger(slog.New(slog.DiscardHandler))}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- pipeline.Run(ctx, src, build, opts...) }()
		<-checked
		cancel()
		runErr = <-errc
	})
	return runErr
}

// A periodic commit covers every value whose call returned, also those
// the stage kept: Offsets flushes them.
func TestOffsetsCommitsTheValuesAStageKept(t *testing.T) {
	keptRun(t, func(g sluice.Group) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		if got, want := g.Offsets(), []sluice.Offset{{TopicPartition: tp, Next: 63}}; !slices.Equal(got, want) {
			t.Errorf("Offsets() while 63's call waits = %v, want %v (32 to 62 returned)", got, want)
		}
	})
}

// A source that asks whether the budget is full before it takes records
// (the franz source) gets the budget the kept values held: the 31 values
// whose call returned go back, and only 63's record stays in flight.
func TestSaturatedGivesBackWhatAStageKept(t *testing.T) {
	keptRun(t, func(g sluice.Group) {
		if saturation.Of(g) {
			t.Errorf("Saturated() = true while 63's call waits, want false (32 to 62 returned: 1 of 32 records in flight)")
		}
	})
}

// A delivery that finds no room gets the budget the kept values held
// before it is queued: another partition's records are admitted at once
// and the partition is not paused.
func TestDeliverGivesBackWhatAStageKept(t *testing.T) {
	keptRun(t, func(g sluice.Group) {
		tp1 := sluice.TopicPartition{Topic: "t", Partition: 1}
		if err := g.Assign([]sluice.TopicPartition{tp1}); err != nil {
			t.Errorf("Assign(t/1) = %v", err)
			return
		}
		if paused := g.Deliver(tp1, recordsOf(tp1, 8)); paused {
			t.Errorf("Deliver of 8 records to t/1 paused it while t/0 holds 1 record in flight and kept 31 whose call returned")
		}
		synctest.Wait()
		offs := g.Offsets()
		if !slices.Contains(offs, sluice.Offset{TopicPartition: tp1, Next: 8}) {
			t.Errorf("Offsets() = %v, want t/1 at 8 (its records admitted and processed)", offs)
		}
	})
}

// A revoke that abandons the waiting call (it ignores its context) commits
// exactly up to it, although no commit flushed the values the stage kept
// before it: the abandon completes them first, and the error names 63.
func TestAbandonCommitsTheValuesAStageKept(t *testing.T) {
	tp := sluice.TopicPartition{Topic: "t", Partition: 0}
	err := keptRunErr(t, func(g sluice.Group) {
		if got, want := g.Revoke([]sluice.TopicPartition{tp}), []sluice.Offset{{TopicPartition: tp, Next: 63}}; !slices.Equal(got, want) {
			t.Errorf("Revoke(t/0) abandoning 63's call = %v, want %v (32 to 62 returned)", got, want)
		}
	})
	var se *engine.StageError
	if !errors.As(err, &se) || !errors.Is(err, sluice.ErrAbandoned) || se.Offset != 63 {
		t.Errorf("Run = %v, want a *StageError wrapping ErrAbandoned at offset 63", err)
	}
}
