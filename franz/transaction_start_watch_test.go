package franz

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The watch keeps the last error kgo retried an InitProducerID for (the
// response's, else the request's), only while it watches; other
// requests' retries and a context's end are no answer of the broker's.
// While it watches, the client's logger asks kgo for its debug lines.
func TestInitWatchKeepsTheLastInitProducerIDError(t *testing.T) {
	dial := errors.New("dial tcp: connection refused")
	retry := func(req string, reqErr, respErr error) []any {
		return []any{"request", req, "tries", 1, "request_error", reqErr, "response_error", respErr}
	}
	w := new(initWatch)
	a := slogAdapter{log: slog.New(slog.DiscardHandler), init: w}
	a.Log(kgo.LogLevelDebug, "retrying request", retry("InitProducerID", nil, kerr.NotCoordinator)...) // not watching yet
	if w.end() != nil {
		t.Fatalf("the watch kept an error before it began")
	}
	w.begin()
	if a.Level() != kgo.LogLevelDebug {
		t.Fatalf("Level while watching = %v, want debug", a.Level())
	}
	for _, kv := range [][]any{
		retry("InitProducerID", nil, kerr.CoordinatorLoadInProgress),
		retry("FindCoordinator", nil, kerr.NotCoordinator),
		retry("InitProducerID", context.DeadlineExceeded, nil),
		{"err", kerr.UnknownServerError},
	} {
		a.Log(kgo.LogLevelDebug, "retrying request", kv...)
	}
	if got := w.end(); !errors.Is(got, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("last = %v, want COORDINATOR_LOAD_IN_PROGRESS", got)
	}
	w.begin()
	a.Log(kgo.LogLevelDebug, "retrying request", retry("InitProducerID", dial, nil)...)
	if got := w.end(); !errors.Is(got, dial) {
		t.Fatalf("last = %v, want the request's error %v", got, dial)
	}
	if a.Level() != kgo.LogLevelNone {
		t.Fatalf("Level after the watch = %v, want none (the handler keeps nothing)", a.Level())
	}
}
