package franz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A poll's own timeout is no fetch error, a closed client ends Run (the
// error names the client), anything else is a warning naming the
// partition.
func TestOnlyAClosedClientIsAFatalFetchError(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for _, err := range []error{context.Canceled, fmt.Errorf("poll: %w", context.DeadlineExceeded)} {
		if got := fetchErrorFatal(log, "client", "orders", 3, err); got != nil {
			t.Errorf("%v: fatal %v, want nil", err, got)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("a poll timeout was logged: %s", buf.String())
	}
	got := fetchErrorFatal(log, "share client", "orders", 3, kgo.ErrClientClosed)
	if !errors.Is(got, kgo.ErrClientClosed) || got.Error() != "franz: share client closed: "+kgo.ErrClientClosed.Error() {
		t.Errorf("closed client: %v", got)
	}
	if got := fetchErrorFatal(log, "client", "orders", 3, kerr.NotLeaderForPartition); got != nil {
		t.Errorf("retriable error: fatal %v, want nil", got)
	}
	if s := buf.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "topic=orders partition=3") {
		t.Errorf("retriable error logged as %q, want a warning naming orders/3", s)
	}
}
