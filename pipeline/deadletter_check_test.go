package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// checkedDestination is a dead-letter destination of a named function
// type whose start check fails, as a Kafka producer's does for a missing
// topic.
type checkedDestination func(context.Context, sluice.DeadLetter) error

var errNoTopic = errors.New("the dead-letter topic does not exist")

func (checkedDestination) CheckStart(context.Context) error { return errNoTopic }

// startedSource records whether Run started it.
type startedSource struct{ started bool }

func (s *startedSource) Run(ctx context.Context, g sluice.Group) error {
	s.started = true
	<-ctx.Done()
	return nil
}

func discard(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(in)
}

// Run calls the dead-letter destination's CheckStart before the source
// starts and returns its error; the source never runs.
func TestDeadLetterStartCheckFailsRunBeforeTheSourceStarts(t *testing.T) {
	dest := checkedDestination(func(context.Context, sluice.DeadLetter) error { return nil })
	src := &startedSource{}
	err := pipeline.Run(context.Background(), src, discard, pipeline.WithDeadLetter(dest))
	if !errors.Is(err, errNoTopic) {
		t.Fatalf("Run = %v, want the start check's error", err)
	}
	if src.started {
		t.Error("the source was started although the start check failed")
	}
}

// A later WithDeadLetter replaces the destination and its check; a plain
// function has none.
func TestDeadLetterStartCheckGoesWithItsDestination(t *testing.T) {
	dest := checkedDestination(func(context.Context, sluice.DeadLetter) error { return nil })
	plain := func(context.Context, sluice.DeadLetter) error { return nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := &startedSource{}
	if err := pipeline.Run(ctx, src, discard, pipeline.WithDeadLetter(dest), pipeline.WithDeadLetter(plain)); err != nil {
		t.Fatalf("Run = %v, want nil: the plain function replaced the checked destination", err)
	}
	if !src.started {
		t.Error("the source was not started")
	}
}
