package testkit_test

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

// A test whose dead-letter destination is broken must not pass because
// Stop interrupted the retries: Stop reports the record not dead-lettered.
func TestStopReportsRecordsNotDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := make(chan struct{}, 1)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if string(r.Value) == "bad" {
					return sluice.Invalid(errors.New("not json"))
				}
				return nil
			})
		}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
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
		if !errors.Is(err, sluice.ErrNotDeadLettered) || !strings.Contains(err.Error(), "t/0 at offset 1") ||
			!strings.Contains(err.Error(), "dlq topic unreachable") {
			t.Fatalf("Stop returned %v, want an error naming t/0 at offset 1 and the destination's error", err)
		}
		if again := h.Stop(); !errors.Is(again, sluice.ErrNotDeadLettered) {
			t.Fatalf("a second Stop returned %v, want the same error", again)
		}
	})
}

// failAt1 fails permanently at offset 1.
func failAt1(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Each(in, func(_ context.Context, r sluice.Record) error {
		if r.Offset == 1 {
			return sluice.Permanent(errors.New("boom"))
		}
		return nil
	}, stages.Name("save"))
}

// A test that never looks at Run's error is told at cleanup: a failed
// stage cannot go unnoticed.
func TestCleanupReportsAnUncheckedRunError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := &recordingTB{TB: t}
		h := testkit.New(tb, failAt1)
		h.Send("t", 0, testkit.Values(3)...)
		h.Assign("t", 0)
		<-h.Fake().Stopped()
		errs := tb.cleanup()
		if len(errs) != 1 || !strings.Contains(errs[0], "never checked") || !strings.Contains(errs[0], "boom") {
			t.Fatalf("cleanup reported %q, want one error naming Run's error", errs)
		}
	})
}

// Once the test checked Run's error (Wait, Stop, Err after Done), the
// cleanup reports nothing more.
func TestCleanupIsQuietWhenTheErrorWasChecked(t *testing.T) {
	for name, check := range map[string]func(testing.TB, *testkit.Harness){
		"Harness.Wait": func(_ testing.TB, h *testkit.Harness) { _ = h.Wait() },
		"Harness.Stop": func(_ testing.TB, h *testkit.Harness) { <-h.Fake().Stopped(); _ = h.Stop() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tb := &recordingTB{TB: t}
				h := testkit.New(tb, failAt1)
				h.Send("t", 0, testkit.Values(3)...)
				h.Assign("t", 0)
				check(tb, h)
				if errs := tb.cleanup(); len(errs) != 0 {
					t.Fatalf("cleanup reported %q after the test checked the error", errs)
				}
			})
		})
	}
	for name, check := range map[string]func(testing.TB, *testkit.Running){
		"Running.Wait": func(tb testing.TB, r *testkit.Running) { _ = r.Wait(tb) },
		"Running.Stop": func(tb testing.TB, r *testkit.Running) { <-r.Done(); _ = r.Stop(tb) },
		"Running.Err":  func(_ testing.TB, r *testkit.Running) { <-r.Done(); _ = r.Err() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tb := &recordingTB{TB: t}
				fake := testkit.NewFake()
				r := testkit.Start(tb, fake, failAt1)
				sendAndAssign(t, fake, 3)
				check(tb, r)
				if errs := tb.cleanup(); len(errs) != 0 {
					t.Fatalf("cleanup reported %q after the test checked the error", errs)
				}
			})
		})
	}
}

// An Assign whose graph fails to build fails the test with the build
// error once: not followed by "Run returned: <nil>" (Run still stopping)
// nor by the same error again.
func TestHarnessAssignReportsTheBuildError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg, cleanupErrs := failingHarness(t, func(tb testing.TB) {
			h := testkit.New(tb, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(stages.Pool(in, 0, func(_ context.Context, r sluice.Record) (int, error) { return 0, nil }))
			})
			h.Assign("t", 0)
		})
		if len(cleanupErrs) != 0 {
			t.Fatalf("the cleanup reported %q again", cleanupErrs)
		}
		if !strings.Contains(msg, "testkit: Assign:") || !strings.Contains(msg, "workers is 0") ||
			strings.Count(msg, "workers is 0") != 1 || strings.Contains(msg, "Run returned") {
			t.Fatalf("Assign failed the test with %q, want the build error, once", msg)
		}
	})
}

// An argument error of a control call (SendRecords with decreasing
// offsets) fails the test at once with that error: Run goes on.
func TestHarnessArgumentErrorFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg, _ := failingHarness(t, func(tb testing.TB) {
			h := testkit.New(tb, discard)
			h.SendRecords(sluice.Record{Topic: "t", Offset: 5}, sluice.Record{Topic: "t", Offset: 3})
		})
		if !strings.Contains(msg, "testkit: SendRecords: testkit: record t/0 at offset 3 does not follow offset 5") || strings.Contains(msg, "Run") {
			t.Fatalf("SendRecords failed the test with %q", msg)
		}
	})
}

// failingHarness calls fn with a recordingTB on its own goroutine, then
// runs the cleanups fn registered (stopping its Run); it returns the
// failure message and what the cleanups reported.
func failingHarness(t *testing.T, fn func(testing.TB)) (string, []string) {
	tb := runRecording(t, fn)
	return tb.message(), tb.cleanup()
}
