package produce_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice/internal/produce"
)

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
