package rebalance

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A final commit the coordinator still answers with REBALANCE_IN_PROGRESS
// when its share of CloseTimeout runs out was refused because the group
// is moving on, as an ILLEGAL_GENERATION is: no record is at risk (the
// next owner starts from the previous commit), so Run returns nil and
// logs a warning saying so, for either refusal.
func TestFinalCommitRefusedByTheGroupIsAWarningNotAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"rebalancing until the deadline", errRebalancing}, {"moved on", errMovedOn}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs lockedBuffer
				h := startLogged(t, slog.New(slog.NewTextHandler(&logs, nil)))
				h.assign(tp0)
				h.setFinal(off(tp0, 9))
				stopped := h.stopAsync()
				for {
					select {
					case err := <-stopped:
						if err != nil {
							t.Fatalf("Run = %v, want nil (the group refused the commit: duplicates, no loss)", err)
						}
						if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, FinalCommitRefused) {
							t.Fatalf("logs %q, want a warning %q", got, FinalCommitRefused)
						}
						return
					case c := <-h.b.commits:
						wantOffsets(t, "final commit", c.offs, off(tp0, 9))
						c.answer <- commitAnswer{err: tc.err}
					}
				}
			})
		})
	}
}
