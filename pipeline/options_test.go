package pipeline_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// runWith returns Run's error for opts. Bad options make Run return before
// the source starts; good ones run it on a cancelled context, so Run
// returns nil at once.
func runWith(opts ...pipeline.Option) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return pipeline.Run(ctx, testkit.NewFake(), func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}, opts...)
}

func TestDeadLetterLimitRejectsRatiosThatAreNotWithinZeroAndOne(t *testing.T) {
	for _, ratio := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.1, 1.5} {
		err := runWith(pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{MaxRatio: ratio}))
		if err == nil || !strings.Contains(err.Error(), "WithDeadLetterLimit: MaxRatio") {
			t.Errorf("MaxRatio %v: Run returned %v, want an error naming WithDeadLetterLimit and MaxRatio", ratio, err)
		}
	}
	err := runWith(pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{MaxConsecutive: -1, Window: -2}))
	if err == nil || !strings.Contains(err.Error(), "MaxConsecutive -1") || !strings.Contains(err.Error(), "Window -2") {
		t.Errorf("Run returned %v, want errors naming MaxConsecutive and Window", err)
	}
}

// Every option's invalid value is an error naming the option and the
// value; none is replaced silently.
func TestEveryInvalidOptionValueIsAnErrorNamingIt(t *testing.T) {
	// A literal nil does not compile (WithDeadLetter is generic); a nil
	// function value is still an error.
	var noDeadLetter func(context.Context, sluice.DeadLetter) error
	cases := []struct {
		opt  pipeline.Option
		want string
	}{
		{pipeline.WithDrainTimeout(0), "sluice: WithDrainTimeout(0s): the drain timeout must be positive"},
		{pipeline.WithMaxInFlight(0), "sluice: WithMaxInFlight(0): the limit must be positive"},
		{pipeline.WithMaxInFlightBytes(-1), "sluice: WithMaxInFlightBytes(-1): the limit must be positive"},
		{pipeline.WithPartitionQueue(-5), "sluice: WithPartitionQueue(-5): the limit must be positive"},
		{pipeline.WithLogger(nil), "sluice: WithLogger(nil): pass a logger"},
		{pipeline.WithDeadLetter(noDeadLetter), "sluice: WithDeadLetter(nil): pass a function"},
		{pipeline.WithStuckThreshold(0), "sluice: WithStuckThreshold(0s): the threshold must be at least 1ms"},
		{pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{Window: 500}),
			"sluice: WithDeadLetterLimit: Window 500 is set but MaxRatio is 0, which turns the ratio check off: set MaxRatio too, or leave Window 0"},
		{pipeline.WithRetry(sluice.RetryPolicy{Attempts: -2}),
			"sluice: WithRetry({Attempts:-2 Initial:0s Max:0s}): RetryPolicy.Attempts -2 must not be negative (1 disables retries, 0 takes the default)"},
	}
	for _, c := range cases {
		if err := runWith(c.opt); err == nil || err.Error() != c.want {
			t.Errorf("Run returned %v, want %s", err, c.want)
		}
	}
}

// A negative output buffer in a stage's spec fails the build naming the
// stage instead of silently taking the default.
func TestNegativeStageBufferIsABuildError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stagekit.AddStage(in, stagekit.StageSpec{Name: "custom", Buffer: -1},
				func(s *stagekit.Stage, in *stagekit.Inlet[sluice.Record], out *stagekit.Outlet[sluice.Record]) error {
					return nil
				})
			return stagekit.AddEnd(out, stagekit.StageSpec{}, func(*stagekit.Stage, *stagekit.Inlet[sluice.Record]) error { return nil })
		})
		if err := h.Fake().Assign("t", 0); err == nil {
			t.Fatal("Assign succeeded")
		}
		err := h.Wait()
		var be *sluice.BuildError
		if !errors.As(err, &be) || !strings.HasSuffix(err.Error(), `stage "custom": Buffer -1 must be 0 (the default, 4 chunks) or more`) {
			t.Fatalf("Run returned %v, want a *BuildError naming stage custom and its Buffer", err)
		}
	})
}

func TestRunRejectsNilArgumentsNamingThem(t *testing.T) {
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}
	var noContext context.Context // nil: what the test passes
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"ctx", func() error { return pipeline.Run(noContext, testkit.NewFake(), build) },
			"sluice: Run needs a context (context.Background() or a signal.NotifyContext); got nil"},
		{"src", func() error { return pipeline.Run(context.Background(), nil, build) },
			"sluice: Run needs a Source (source.NewSource, franz.NewSource, franz.NewShareSource, follow.New around one of them, or testkit.NewFake in tests); got nil"},
		{"build", func() error { return pipeline.Run(context.Background(), testkit.NewFake(), nil) },
			"sluice: Run needs a Builder; got nil"},
	}
	for _, c := range cases {
		if err := c.run(); err == nil || err.Error() != c.want {
			t.Errorf("Run with a nil %s returned %v, want %s", c.name, err, c.want)
		}
	}
}
