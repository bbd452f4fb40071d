package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A builder that panics makes Run return a *sluice.BuildError whose Err is the
// *sluice.PanicError, as the package doc says; panic(err) unwraps to err.
func TestBuilderPanicIsABuildErrorWrappingThePanicError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errConfig := errors.New("no table name configured")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			panic(errConfig)
		})
		if err := h.Fake().Assign("t", 2); err == nil {
			t.Fatal("Assign succeeded")
		}
		err := h.Wait()
		var be *sluice.BuildError
		if !errors.As(err, &be) || be.Topic != "t" || be.Partition != 2 {
			t.Fatalf("Run returned %v, want a *BuildError for t/2", err)
		}
		var pe *sluice.PanicError
		if !errors.As(err, &pe) || pe.Value != errConfig || len(pe.Stack) == 0 || be.Err != pe {
			t.Fatalf("Run returned %v, want a *BuildError whose Err is the builder's *PanicError with a stack", err)
		}
		if !errors.Is(err, errConfig) {
			t.Fatalf("Run's error %v does not unwrap to the panic value", err)
		}
		if !strings.HasPrefix(be.Problem, "the builder panicked: no table name configured") {
			t.Fatalf("Problem = %q, want it to name the builder's panic", be.Problem)
		}
	})
}

// A wiring mistake is a *sluice.BuildError without a panic.
func TestWiringMistakeIsABuildErrorWithoutPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			stages.Discard(in)
			return pipeline.End{}
		})
		if err := h.Fake().Assign("t", 0); err == nil {
			t.Fatal("Assign succeeded")
		}
		err := h.Wait()
		var be *sluice.BuildError
		var pe *sluice.PanicError
		if !errors.As(err, &be) || be.Err != nil || errors.As(err, &pe) {
			t.Fatalf("Run returned %v, want a *BuildError with no *PanicError", err)
		}
	})
}

// A stage function's panic(err) stays a *sluice.PanicError inside the
// *sluice.StageError, and unwraps to err.
func TestStagePanicWithAnErrorUnwrapsToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errDriver := errors.New("driver bug")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { panic(errDriver) }, stages.Name("insert"))
		})
		assignAndSend(h, 1)
		err := h.Wait()
		var pe *sluice.PanicError
		if !errors.As(err, &pe) || !errors.Is(err, errDriver) {
			t.Fatalf("Run returned %v, want a *PanicError unwrapping to %v", err, errDriver)
		}
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Stage != "insert" || se.Offset != 0 {
			t.Fatalf("Run returned %v, want a *StageError of insert at offset 0", err)
		}
	})
}
