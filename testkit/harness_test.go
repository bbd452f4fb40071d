package testkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A test whose dead-letter destination is broken must not pass because
// Stop interrupted the retries: Stop reports the record not dead-lettered.
func TestStopReportsRecordsNotDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := make(chan struct{}, 1)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r pipeline.Record) error {
				if string(r.Value) == "bad" {
					return pipeline.Invalid(errors.New("not json"))
				}
				return nil
			})
		}, pipeline.WithDeadLetter(func(context.Context, pipeline.DeadLetter) error {
			select {
			case called <- struct{}{}:
			default:
			}
			return errors.New("dlq topic unreachable") // transient: retried
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("ok"), []byte("bad"))
		<-called
		err := h.Stop()
		if !errors.Is(err, pipeline.ErrNotDeadLettered) || !strings.Contains(err.Error(), "t/0 at offset 1") ||
			!strings.Contains(err.Error(), "dlq topic unreachable") {
			t.Fatalf("Stop returned %v, want an error naming t/0 at offset 1 and the destination's error", err)
		}
		if again := h.Stop(); !errors.Is(again, pipeline.ErrNotDeadLettered) {
			t.Fatalf("a second Stop returned %v, want the same error", again)
		}
	})
}
