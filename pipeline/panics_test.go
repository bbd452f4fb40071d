package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// expectPanicError checks that err is a *sluice.StageError of stage on t/0 at
// offset, wrapping a *sluice.PanicError with value.
func expectPanicError(t *testing.T, err error, stage string, offset int64, value string) {
	t.Helper()
	var se *sluice.StageError
	var pe *sluice.PanicError
	if !errors.As(err, &se) || !errors.As(err, &pe) {
		t.Fatalf("Run returned %v, want a *StageError wrapping a *PanicError", err)
	}
	if se.Stage != stage || se.Topic != "t" || se.Partition != 0 || se.Offset != offset || pe.Value != value {
		t.Fatalf("got stage %q on %s/%d at %d, panic %v; want %q on t/0 at %d, panic %q",
			se.Stage, se.Topic, se.Partition, se.Offset, pe.Value, stage, offset, value)
	}
	if len(pe.Stack) == 0 {
		t.Fatal("the PanicError has no stack")
	}
}

func TestPanicInAnOnCloseHookStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		olderRan := false
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { olderRan = true; return nil })
			p.OnClose(func(context.Context) error { panic("flush exploded") })
			return stages.Discard(in)
		})
		assignAndSend(h, 3)
		h.WaitCommitted("t", 0, 3)
		h.Revoke("t", 0)
		expectPanicError(t, h.Wait(), "OnClose", -1, "flush exploded")
		if !olderRan {
			t.Fatal("the hook registered before the panicking one did not run")
		}
	})
}

func TestOnCloseHookErrorIsAStageError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("close failed")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			p.OnClose(func(context.Context) error { return boom })
			return stages.Discard(in)
		})
		h.Assign("t", 0)
		h.Revoke("t", 0)
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, boom) || se.Stage != "OnClose" || se.Offset != -1 ||
			!strings.Contains(err.Error(), `stage "OnClose" on t/0`) {
			t.Fatalf("Run returned %v, want a *StageError of OnClose on t/0 wrapping %v", err, boom)
		}
	})
}

func TestPanicInTheDeadLetterFunctionStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse, stages.Name("parse")))
		}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
			calls++
			panic("dlq client exploded")
		}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("bad"), []byte("2"))
		expectPanicError(t, h.Wait(), "parse", 1, "dlq client exploded")
		if calls != 1 {
			t.Fatalf("the dead-letter function was called %d times, want once (a panic is not retried)", calls)
		}
		checkCommitted(t, h, 1, "(the record that was not dead-lettered stays uncommitted)")
	})
}

func TestStuckThresholdBelowTheMinimumIsAnOptionError(t *testing.T) {
	for _, d := range []time.Duration{1, 3, pipeline.MinStuckThreshold - 1} {
		err := runWith(pipeline.WithStuckThreshold(d))
		if err == nil || !strings.Contains(err.Error(), "WithStuckThreshold("+d.String()+")") ||
			!strings.Contains(err.Error(), "at least 1ms") {
			t.Errorf("WithStuckThreshold(%v): Run returned %v, want an error naming the option, the value and the minimum", d, err)
		}
	}
	if err := runWith(pipeline.WithStuckThreshold(pipeline.MinStuckThreshold)); err != nil {
		t.Errorf("WithStuckThreshold(%v): %v", pipeline.MinStuckThreshold, err)
	}
}

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
