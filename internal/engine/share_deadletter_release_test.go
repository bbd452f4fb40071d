package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// In share mode a record one branch of a Tee found invalid is handed to
// the dead-letter destination, and stored there, while the other branch
// exhausts its retries on it. docs/share.md: an invalid record is
// "dead-lettered, then ACCEPT". A RELEASE after the dead letter was stored
// has the broker deliver the record again, and the branch finds it
// invalid again: a second dead letter of the same record.
func TestShareDeadLetteredRecordIsNotReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &shareSource{tp: sluice.TopicPartition{Topic: "t"}, recs: shareRecords(0)}
		var mu sync.Mutex
		dead := 0
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			br := stages.Tee(in, 2)
			a := stages.Each(br[0], func(context.Context, sluice.Record) error {
				return sluice.Invalid(errors.New("bad data"))
			}, stages.Name("validate"))
			b := stages.Each(br[1], func(context.Context, sluice.Record) error {
				return errors.New("service down")
			}, stages.Name("write"))
			return pipeline.All(a, b)
		}
		err := pipeline.Run(t.Context(), src, build,
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond}),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
				mu.Lock()
				defer mu.Unlock()
				dead++
				return nil
			}))
		if err != nil || src.err != nil {
			t.Fatalf("Run = %v, source: %v; want both nil", err, src.err)
		}
		if dead != 1 {
			t.Fatalf("%d dead letters, want 1", dead)
		}
		if got := src.acks[0]; got != sluice.AckAccepted {
			t.Errorf("outcome of the dead-lettered record %v, want %v (it is delivered again and dead-lettered a second time)", got, sluice.AckAccepted)
		}
	})
}
