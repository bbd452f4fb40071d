package produce_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// undelivered returns n messages from in/0 at offsets 0..n-1.
func undelivered(n int) []sluice.UndeliveredMessage {
	us := make([]sluice.UndeliveredMessage, n)
	for i := range us {
		us[i] = sluice.UndeliveredMessage{Topic: "out", Source: sluice.TopicPartition{Topic: "in"}, Offset: int64(i)}
	}
	return us
}

// closeErrorOf has a tracker's Close build the CloseError of undelivered
// messages us plus unreported ones (whose failed reports nobody reads),
// and of a client that does not close in time when hang; it returns how
// long Close took and its error.
func closeErrorOf(t *testing.T, us []sluice.UndeliveredMessage, unreported int, hang bool) (time.Duration, error) {
	t.Helper()
	tr := produce.NewTracker(names)
	for range len(us) + unreported {
		must(t, tr.Send(func() error { return nil }))
	}
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	err := tr.Close(produce.CloseSteps{
		Timeout: 30 * time.Second,
		Flush:   func(time.Duration) bool { return true },
		GiveUp: func(context.Context) {
			for _, u := range us {
				tr.Failed(true, u)
			}
		},
		CloseClient: func() {
			if hang {
				<-release
			}
		},
		Logger: quietLogger,
	})
	return time.Since(start), err
}

// CloseError's text counts what was given up on, names the first ten
// undelivered messages and counts the rest ("and N more", including the
// unreported ones), and says when the client did not close in time.
func TestCloseErrorText(t *testing.T) {
	named := func(n int) string {
		s := ""
		for i := range n {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("to out from in/0@%d", i)
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		undeliv    int
		unreported int
		hang       bool
		took       time.Duration // waiting for unreported messages, or for the client
		want       string
	}{
		{"one", 1, 0, false, 0, "closing the producer: 1 message undelivered after 30s (to out from in/0@0)"},
		{"ten", 10, 0, false, 0, "closing the producer: 10 messages undelivered after 30s (" + named(10) + ")"},
		{"eleven", 11, 0, false, 0, "closing the producer: 11 messages undelivered after 30s (" + named(10) + " and 1 more)"},
		{"many", 25, 0, false, 0, "closing the producer: 25 messages undelivered after 30s (" + named(10) + " and 15 more)"},
		{"unreported", 2, 3, false, produce.CloseGrace, "closing the producer: 5 messages undelivered after 30s (" + named(2) + " and 3 more)"},
		{"only unreported", 0, 4, false, produce.CloseGrace, "closing the producer: 4 messages undelivered after 30s"},
		{"client", 0, 0, true, produce.CloseGrace, "closing the producer: the client did not close within 1s"},
		{"both", 1, 0, true, produce.CloseGrace, "closing the producer: 1 message undelivered after 30s (to out from in/0@0); the client did not close within 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				took, err := closeErrorOf(t, undelivered(tc.undeliv), tc.unreported, tc.hang)
				if err == nil || err.Error() != tc.want {
					t.Fatalf("Close returned %v, want %q", err, tc.want)
				}
				if took != tc.took {
					t.Errorf("Close took %v, want %v", took, tc.took)
				}
				var ce *sluice.CloseError
				if !errors.As(err, &ce) {
					t.Fatalf("Close returned %T, want a *CloseError", err)
				}
				if ce.Count() != tc.undeliv+tc.unreported || ce.Unreported != tc.unreported || len(ce.Undelivered) != tc.undeliv {
					t.Errorf("Count %d, Unreported %d, %d Undelivered; want %d, %d, %d",
						ce.Count(), ce.Unreported, len(ce.Undelivered), tc.undeliv+tc.unreported, tc.unreported, tc.undeliv)
				}
			})
		})
	}
}

// A backend's ErrClosed names the backend, and errors.Is finds the shared
// ErrClosed (sink.ErrClosed) in every error wrapping it, and not in
// another backend's.
func TestNewErrClosedIsTheSharedSentinel(t *testing.T) {
	closed := produce.NewErrClosed("kafkaclient")
	if got := closed.Error(); got != "kafkaclient: the producer is closed" {
		t.Errorf("text %q, want %q", got, "kafkaclient: the producer is closed")
	}
	err := fmt.Errorf("producing to out: %w", closed)
	if !errors.Is(err, produce.ErrClosed) || !errors.Is(err, closed) {
		t.Errorf("errors.Is(%v, ErrClosed) = %v, errors.Is(err, the backend's) = %v; want both true",
			err, errors.Is(err, produce.ErrClosed), errors.Is(err, closed))
	}
	if errors.Is(err, produce.NewErrClosed("other")) {
		t.Error("another backend's ErrClosed matches")
	}
}
