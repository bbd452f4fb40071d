package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/enginetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// benchDeadLetters pushes b.N records through Map → Discard on one
// partition, every record invalid when invalid is set, with dest as the
// dead-letter destination, and waits until all are committed: the
// runtime's own cost per dead letter, without a client.
func benchDeadLetters(b *testing.B, invalid bool, dest func(context.Context, sluice.DeadLetter) error) {
	bad := sluice.Invalid(errors.New("bad"))
	enginetest.BenchCommitted(b, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if invalid {
				return r, bad
			}
			return r, nil
		}))
	}, pipeline.WithDeadLetter(dest))
}

// readyOutcome is a deferred dead letter already delivered.
type readyOutcome struct{}

func (readyOutcome) Ready() bool { return true }
func (readyOutcome) Wait() error { return nil }

// BenchmarkDeadLetters compares every record valid, every record invalid
// with a destination that returns at once, and every record invalid with
// a destination that defers its outcome (engine.DeferDeadLetter, as the
// Kafka destinations do), which is ready at once.
func BenchmarkDeadLetters(b *testing.B) {
	ok := func(context.Context, sluice.DeadLetter) error { return nil }
	deferred := func(ctx context.Context, _ sluice.DeadLetter) error {
		if !engine.DeferDeadLetter(ctx, readyOutcome{}) {
			return errors.New("not deferred")
		}
		return nil
	}
	b.Run("valid", func(b *testing.B) { benchDeadLetters(b, false, ok) })
	b.Run("invalid", func(b *testing.B) { benchDeadLetters(b, true, ok) })
	b.Run("invalid-deferred", func(b *testing.B) { benchDeadLetters(b, true, deferred) })
}
