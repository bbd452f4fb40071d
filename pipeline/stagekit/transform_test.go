package stagekit_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A retried attempt starts afresh: what a failed attempt emitted never
// reaches the next stage.
func TestTransformDiscardsTheEmitsOfAFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		attempts := 0
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stagekit.Transform(in, stagekit.StageSpec{Kind: "T", Retry: &sluice.RetryPolicy{Attempts: 3, Initial: time.Millisecond}},
				func(_ context.Context, r sluice.Record, emit *stagekit.Emitter[string]) error {
					attempts++
					emit.Emit("first")
					if attempts == 1 {
						return errors.New("flaky") // transient: retried
					}
					emit.Emit("second")
					return nil
				})
			return stages.Each(out, func(_ context.Context, v string) error { got = append(got, v); return nil })
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("x"))
		h.WaitCommitted("t", 0, 1)
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"first", "second"}; !slices.Equal(got, want) || attempts != 2 {
			t.Fatalf("downstream got %q after %d attempts, want %q after 2", got, attempts, want)
		}
	})
}

// A value with several emits commits only when every one of them
// completed; one with none completes at once.
func TestTransformCommitsAValueWhenAllItsEmitsCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			out := stagekit.Transform(in, stagekit.StageSpec{Kind: "T"},
				func(_ context.Context, r sluice.Record, emit *stagekit.Emitter[int64]) error {
					for range r.Offset { // offset 0: no emit; offset 2: two
						emit.Emit(r.Offset)
					}
					return nil
				})
			seen := 0
			return stages.Each(out, func(ctx context.Context, v int64) error {
				if seen++; seen == 3 { // the second emit of offset 2
					<-release
				}
				return nil
			})
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"), []byte("b"), []byte("c"))
		synctest.Wait()
		if got := h.Committed("t", 0); got != 2 {
			t.Fatalf("committed %d with offset 2's second value pending, want 2", got)
		}
		close(release)
		h.WaitCommitted("t", 0, 3)
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A nil function fails the build naming the stage, instead of a panic on
// the stage's goroutine.
func TestTransformWithANilFunctionFailsTheBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stagekit.Transform[sluice.Record, int](in, stagekit.StageSpec{Name: "mine"}, nil))
		})
		if err := h.Fake().Assign("t", 0); err == nil {
			t.Fatal("Assign succeeded")
		}
		var be *sluice.BuildError
		if err := h.Wait(); !errors.As(err, &be) || err.Error() == "" || !containsAll(err.Error(), `"mine"`, "the function is nil") {
			t.Fatalf("Run returned %v, want a BuildError naming stage \"mine\" and the nil function", err)
		}
	})
}
