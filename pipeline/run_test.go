package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func TestMapEachCommitsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out sink
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			offs := stages.Map(in, func(_ context.Context, r sluice.Record) (int64, error) { return r.Offset, nil })
			return out.each(p, offs)
		})
		h.Assign("events", 0, 1)
		h.Send("events", 0, testkit.Values(1000)...)
		h.Send("events", 1, testkit.Values(3)...)
		h.WaitCommitted("events", 0, 1000)
		h.WaitCommitted("events", 1, 3)
		synctest.Wait()
		if got := h.Committed("events", 0); got != 1000 {
			t.Fatalf("committed %d, want 1000", got)
		}
		got := out.of(0)
		if len(got) != 1000 {
			t.Fatalf("processed %d, want 1000", len(got))
		}
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("value %d has offset %d: order broken", i, o)
			}
		}
		stopClean(t, h)
	})
}

// shutdownFailingSource assigns t/0, delivers one record and, once Run
// stops it, shuts the group down and fails as a Kafka source whose final
// commit failed does.
type shutdownFailingSource struct{ err error }

func (s shutdownFailingSource) Run(ctx context.Context, g sluice.Group) error {
	tp := sluice.TopicPartition{Topic: "t", Partition: 0}
	if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
		return err
	}
	g.Deliver(tp, []sluice.Record{{Topic: "t", Partition: 0, Offset: 0, Value: []byte("x")}})
	<-ctx.Done()
	g.Shutdown()
	return s.err
}

// A source that fails in the shutdown a stage error started is not
// hidden behind the stage error: Run returns both.
func TestSourceShutdownErrorIsJoinedAfterTheStageError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCommit := errors.New("final commit failed")
		errWrite := errors.New("schema mismatch")
		err := pipeline.Run(context.Background(), shutdownFailingSource{err: errCommit},
			func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, func(context.Context, sluice.Record) error { return sluice.Permanent(errWrite) }, stages.Name("write"))
			})
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, errWrite) || !errors.Is(err, errCommit) {
			t.Fatalf("Run returned %v, want the *StageError and the source's error", err)
		}
		want := "sluice: stage \"write\" on t/0 at offset 0: schema mismatch\nsluice: source failed: final commit failed"
		if err.Error() != want {
			t.Fatalf("Run returned\n%v\nwant\n%s", err, want)
		}
	})
}

// Without a stage error, the source's shutdown error is what Run returns.
func TestSourceShutdownErrorAloneIsReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCommit := errors.New("final commit failed")
		r := testkit.Start(t, shutdownFailingSource{err: errCommit},
			func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(in)
			})
		synctest.Wait()
		if err := r.Stop(t); err == nil || err.Error() != "sluice: source failed: final commit failed" || !errors.Is(err, errCommit) {
			t.Fatalf("Run returned %v, want the source's error", err)
		}
	})
}
