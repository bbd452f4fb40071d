package produce_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// A message the library accepts is pending until its report is read; one
// it refuses never is. Admit and ReceivedN count several at once.
func TestTrackerCountsAcceptedMessagesOnly(t *testing.T) {
	tr := produce.NewTracker(names)
	errRefused := errors.New("refused")
	if err := tr.Send(func() error { return errRefused }); err != errRefused {
		t.Fatalf("Send returned %v, want the library's error", err)
	}
	must(t, tr.Send(func() error { return nil }))
	must(t, tr.Admit(3))
	if n := tr.Pending(); n != 4 {
		t.Fatalf("%d pending, want 4", n)
	}
	tr.ReceivedN(2)
	tr.Received()
	if gaveUp := tr.Failed(false, sluice.UndeliveredMessage{}); gaveUp {
		t.Error("Failed(false, ...) reported a give-up")
	}
	if n := tr.Pending(); n != 0 {
		t.Errorf("%d pending, want 0", n)
	}
}

// Once Close started, nothing reaches the library: Send does not call
// it, Admit and WhileOpen refuse, and the refusal is ErrClosed.
func TestTrackerRefusesAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, false)
		if tr.Closing() || tr.ClosingContext().Err() != nil {
			t.Fatal("a new tracker is closing")
		}
		must(t, tr.Close(c.closeSteps()))
		if !tr.Closing() || tr.ClosingContext().Err() == nil {
			t.Error("Closing or ClosingContext do not say Close started")
		}
		called := false
		if err := tr.Send(func() error { called = true; return nil }); err != errClosed || called {
			t.Errorf("Send after Close returned %v (library called: %v), want ErrClosed and no call", err, called)
		}
		if err := tr.Admit(1); err != errClosed {
			t.Errorf("Admit after Close returned %v, want ErrClosed", err)
		}
		if tr.WhileOpen(func() { called = true }) || called {
			t.Error("WhileOpen ran its function after Close")
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("%d pending, want 0", n)
		}
		select {
		case <-tr.Gone():
		default:
			t.Error("Gone is not closed after Close")
		}
	})
}

// Close with nothing outstanding neither gives up nor logs, and returns
// nil; a later Close does not run the steps again.
func TestTrackerCloseWithNothingOutstanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		var log bytes.Buffer
		flushes, giveUps, closes := 0, 0, 0
		steps := produce.CloseSteps{
			Timeout:     time.Second,
			Flush:       func(time.Duration) bool { flushes++; return false },
			GiveUp:      func(context.Context) { giveUps++ },
			CloseClient: func() { closes++ },
			Logger:      slog.New(slog.NewTextHandler(&log, nil)),
		}
		must(t, tr.Close(steps))
		must(t, tr.Close(steps))
		if flushes != 1 || giveUps != 0 || closes != 1 {
			t.Errorf("Flush, GiveUp, CloseClient called %d, %d, %d times; want 1, 0, 1", flushes, giveUps, closes)
		}
		if log.Len() != 0 {
			t.Errorf("Close logged %q, want nothing", log.String())
		}
	})
}

// A failing Close logs its error once, as a warning under the backend's
// name.
func TestTrackerCloseLogsItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		must(t, tr.Send(func() error { return nil })) // never reported
		var log bytes.Buffer
		err := tr.Close(produce.CloseSteps{
			Timeout:     time.Second,
			Flush:       func(time.Duration) bool { return true },
			GiveUp:      func(context.Context) {},
			CloseClient: func() {},
			Logger:      slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime})),
		})
		if err == nil {
			t.Fatal("Close returned nil with a message never reported")
		}
		want := `level=WARN msg="stub: closing the producer" err="closing the producer: 1 message undelivered after 1s"` + "\n"
		if got := log.String(); got != want {
			t.Errorf("Close logged %q, want %q", got, want)
		}
	})
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
