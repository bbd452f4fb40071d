package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// rejectOdd marks records with an odd offset invalid in a stage named
// "validate".
func rejectOdd(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	valid := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		if r.Offset%2 == 1 {
			return r, sluice.Invalid(fmt.Errorf("odd offset %d", r.Offset))
		}
		return r, nil
	}, stages.Name("validate"))
	return stages.Discard(valid)
}

func TestDeadLettersRecordsEachPartitionInOffsetOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		h := testkit.New(t, rejectOdd, dead.Option())
		h.Send("t", 0, testkit.Values(10)...)
		h.Send("t", 1, testkit.Values(7)...)
		h.Assign("t", 0, 1)
		got := dead.Wait(t, 8)
		if len(got) != 8 || dead.Len() != 8 || dead.Calls() != 8 {
			t.Fatalf("Wait returned %d letters, Len %d, Calls %d; want 8 each", len(got), dead.Len(), dead.Calls())
		}
		h.WaitCommitted("t", 0, 10)
		h.WaitCommitted("t", 1, 7)
		stopClean(t, h)
		if o := dead.Offsets("t", 0); !slices.Equal(o, []int64{1, 3, 5, 7, 9}) {
			t.Errorf("t/0 dead letters at %v, want [1 3 5 7 9]", o)
		}
		if o := dead.Offsets("t", 1); !slices.Equal(o, []int64{1, 3, 5}) {
			t.Errorf("t/1 dead letters at %v, want [1 3 5]", o)
		}
		if o := dead.Offsets("other", 0); o != nil {
			t.Errorf("dead letters of a topic never sent: %v", o)
		}
		for _, dl := range dead.Records() {
			if dl.Stage != "validate" || !sluice.IsInvalid(dl.Err) ||
				!strings.Contains(dl.Err.Error(), fmt.Sprintf("odd offset %d", dl.Record.Offset)) ||
				string(dl.Record.Value) != fmt.Sprint(dl.Record.Offset) {
				t.Errorf("dead letter %+v: want stage validate, the Invalid error and the record untouched", dl)
			}
		}
	})
}

// Records is a snapshot: what the test holds does not change under it.
func TestDeadLettersRecordsIsACopy(t *testing.T) {
	dead := testkit.NewDeadLetters()
	fn := dead.Func()
	_ = fn(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "t", Offset: 4}})
	snap := dead.Records()
	snap[0].Record.Offset = 99
	_ = fn(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "t", Offset: 6}})
	if o := dead.Offsets("t", 0); !slices.Equal(o, []int64{4, 6}) || len(snap) != 1 {
		t.Fatalf("offsets %v after changing a snapshot of %d letters, want [4 6] and a 1-letter snapshot", o, len(snap))
	}
}

// An injected transient failure is retried by the runtime: the call
// fails, nothing is recorded, the retry records the letter once.
func TestDeadLettersFailWithTransientIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		var mu sync.Mutex
		failures := 2
		dead.FailWith(func(sluice.DeadLetter) error {
			mu.Lock()
			defer mu.Unlock()
			if failures == 0 {
				return nil
			}
			failures--
			return errors.New("destination down")
		})
		h := testkit.New(t, rejectOdd, dead.Option())
		h.Send("t", 0, testkit.Values(2)...)
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		stopClean(t, h)
		if dead.Calls() != 3 || !slices.Equal(dead.Offsets("t", 0), []int64{1}) {
			t.Fatalf("%d calls, letters at %v; want 3 calls (2 failed) and offset 1 recorded once",
				dead.Calls(), dead.Offsets("t", 0))
		}
	})
}

// A permanent injected failure stops Run with ErrNotDeadLettered, and the
// record is neither recorded nor committed.
func TestDeadLettersFailWithPermanentStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		dead.FailWith(func(sluice.DeadLetter) error { return sluice.Permanent(errors.New("rejected")) })
		h := testkit.New(t, rejectOdd, dead.Option())
		h.Send("t", 0, testkit.Values(3)...)
		h.Assign("t", 0)
		err := h.Wait()
		if !errors.Is(err, sluice.ErrNotDeadLettered) || !strings.Contains(err.Error(), "rejected") {
			t.Fatalf("Run returned %v, want ErrNotDeadLettered wrapping the injected error", err)
		}
		if dead.Len() != 0 || dead.Calls() != 1 {
			t.Errorf("%d letters recorded in %d calls, want none in 1 call", dead.Len(), dead.Calls())
		}
		if c := h.Committed("t", 0); c > 1 {
			t.Errorf("committed %d, want at most 1: offset 1 was not dead-lettered", c)
		}
		dead.FailWith(nil)
		_ = dead.Func()(context.Background(), sluice.DeadLetter{})
		if dead.Len() != 1 {
			t.Errorf("FailWith(nil): %d letters recorded, want the next call recorded", dead.Len())
		}
	})
}

// recordingTB is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as testing.T does.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	msg      string
	errs     []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Cleanup(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, fn)
}

// cleanup runs the registered cleanups, last first, and returns what they
// reported with Errorf.
func (r *recordingTB) cleanup() []string {
	r.mu.Lock()
	fns := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for _, fn := range slices.Backward(fns) {
		fn()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recordingTB) message() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msg
}

// runRecording calls fn with a recordingTB on its own goroutine and
// returns the recordingTB once fn returned or failed.
func runRecording(t *testing.T, fn func(testing.TB)) *recordingTB {
	tb := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb
}

// runFailing calls fn with a recordingTB on its own goroutine and returns
// the failure message ("" when fn returned normally).
func runFailing(t *testing.T, fn func(testing.TB)) string {
	return runRecording(t, fn).message()
}

// Wait fails the test, saying what it got, when the letters never come
// (inside a bubble the timeout fires as soon as everything is blocked).
func TestDeadLettersWaitFailsWhenTheLettersNeverCome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := testkit.NewDeadLetters()
		_ = dead.Func()(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "t", Offset: 3}, Stage: "decode"})
		msg := runFailing(t, func(tb testing.TB) { dead.Wait(tb, 2) })
		if !strings.Contains(msg, "1 dead letters recorded (1 calls), t/0@3 from decode") || !strings.Contains(msg, "waiting for 2") {
			t.Fatalf("Wait failed with %q, want it to name what was recorded and what it waited for", msg)
		}
		if msg := runFailing(t, func(tb testing.TB) { dead.Wait(tb, -1) }); !strings.Contains(msg, "Wait(-1)") {
			t.Fatalf("Wait(-1) failed with %q, want it to name the bad argument", msg)
		}
	})
}
