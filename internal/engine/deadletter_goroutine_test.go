package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// deadLetterLoop is how a goroutine stack shows a partition's dead-letter
// goroutine.
const deadLetterLoop = "engine.(*graph).runDeadLetters("

// invalidAt is an Each function that finds the records at the given
// offsets of partition 0 invalid.
func invalidAt(offs ...int64) func(context.Context, sluice.Record) error {
	return func(_ context.Context, r sluice.Record) error {
		if r.Partition == 0 && slices.Contains(offs, r.Offset) {
			return sluice.Invalid(errors.New("bad record"))
		}
		return nil
	}
}

// A partition runs a dead-letter goroutine only once it has a record to
// dead-letter: of two partitions, the one with an invalid record runs
// one, the other none. A revoke waits for it, commits past the
// dead-lettered record, and leaves no such goroutine behind.
func TestDeadLetterGoroutineStartsWithTheFirstDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp0, tp1 := sluice.TopicPartition{Topic: "t", Partition: 0}, sluice.TopicPartition{Topic: "t", Partition: 1}
		var sent []int64
		checked := make(chan struct{})
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp0, tp1}); err != nil {
				return err
			}
			g.Deliver(tp1, recordsOf(tp1, 100))
			synctest.Wait()
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines with nothing to dead-letter, want 0", n)
			}
			g.Deliver(tp0, recordsOf(tp0, 100))
			synctest.Wait()
			if n := bubbleDeadLetterGoroutines(); n != 1 {
				t.Errorf("%d dead-letter goroutines with one partition's record invalid, want 1", n)
			}
			offs := g.Revoke([]sluice.TopicPartition{tp0, tp1})
			want := []sluice.Offset{{TopicPartition: tp0, Next: 100}, {TopicPartition: tp1, Next: 100}}
			slices.SortFunc(offs, func(a, b sluice.Offset) int { return int(a.Partition - b.Partition) })
			if !slices.Equal(offs, want) {
				t.Errorf("Revoke = %v, want %v", offs, want)
			}
			synctest.Wait() // the dead-letter goroutine returns after it let the revoke go on
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after the revoke, want 0", n)
			}
			close(checked)
			<-ctx.Done()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- pipeline.Run(ctx, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, invalidAt(7))
			}, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
				sent = append(sent, dl.Record.Offset)
				return nil
			}))
		}()
		<-checked
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if !slices.Equal(sent, []int64{7}) {
			t.Errorf("dead-lettered %v, want [7]", sent)
		}
	})
}

// A revoke waits for the dead-letter goroutine as well as the stages: with
// the last record's dead letter held in the destination, the stages exit
// at the revoke and the revoke still waits, then commits past it.
func TestRevokeWaitsForADeadLetterOfTheLastValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		gate := make(chan struct{})
		revoking, revoked := make(chan struct{}), make(chan []sluice.Offset, 1)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recordsOf(tp, 10))
			synctest.Wait() // every record processed; the dead letter of 9 waits at the gate
			close(revoking)
			revoked <- g.Revoke([]sluice.TopicPartition{tp})
			<-ctx.Done()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- pipeline.Run(ctx, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, invalidAt(9))
			}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
				<-gate
				return nil
			}))
		}()
		<-revoking
		synctest.Wait() // the revoke stopped the input and the stages exited
		select {
		case offs := <-revoked:
			t.Fatalf("Revoke returned %v while the dead letter of the last record was not delivered, want it to wait", offs)
		default:
		}
		if n := bubbleDeadLetterGoroutines(); n != 1 {
			t.Errorf("%d dead-letter goroutines while one delivers, want 1", n)
		}
		close(gate)
		if offs, want := <-revoked, []sluice.Offset{{TopicPartition: tp, Next: 10}}; !slices.Equal(offs, want) {
			t.Errorf("Revoke = %v, want %v", offs, want)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
