package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// A dead letter goes out once every record before it finished. Records
// whose call returned in another branch's Each are finished, even while
// that Each is inside its next call: the dead letter must not wait for
// that call, nor for the source's next commit interval.
//
// Route sends even offsets to one Each and odd ones to another. After a
// first chunk of fast calls (0 to 63), the second chunk's call for 100
// (even branch) waits at a gate, after the calls for 64 to 98 returned;
// the odd branch fails 81 as invalid. Every record before 81 finished
// (the evens 64 to 80 returned nil in their branch): 81's dead letter
// must go out while 100's call waits. The source never calls Offsets
// meanwhile (its commit interval is not due).
func TestEachKeptValuesDoNotHoldADeadLetterInAnotherBranchBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t", Partition: 0}
		const bad, held = 81, 100
		gate, checked := make(chan struct{}), make(chan struct{})
		sent := make(chan int64, 1)
		fn := func(_ context.Context, r sluice.Record) error {
			switch r.Offset {
			case held:
				<-gate
			case bad:
				return sluice.Invalid(errors.New("bad record"))
			}
			return nil
		}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			br := stages.Route(in, 2, func(r sluice.Record) int { return int(r.Offset % 2) })
			return pipeline.All(stages.Each(br[0], fn), stages.Each(br[1], fn))
		}
		recs := recordsOf(tp, 128)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
				return err
			}
			g.Deliver(tp, recs[:64])
			synctest.Wait() // the first chunk: fast calls in both branches
			g.Deliver(tp, recs[64:])
			synctest.Wait() // 64 to 98 even returned, 100 waits; 81 failed as invalid
			select {
			case off := <-sent:
				if off != bad {
					t.Errorf("dead-lettered %d, want %d", off, bad)
				}
			default:
				t.Errorf("%d's dead letter not sent while %d's call waits, want it sent (every record before it finished: the evens 64 to 80 returned nil)", bad, held)
			}
			close(gate)
			close(checked)
			<-ctx.Done()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- pipeline.Run(ctx, src, build, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
				sent <- dl.Record.Offset
				return nil
			}))
		}()
		<-checked
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
