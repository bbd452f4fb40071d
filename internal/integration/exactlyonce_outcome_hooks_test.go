package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-go/sluice"
)

// commitRecovery is a hook that tells when a consumer committed again
// after a failed commit: the failure did not stop it.
type commitRecovery struct {
	mu        sync.Mutex
	failed    error         // the first failed commit, nil before it
	recovered chan struct{} // closed at the first commit succeeding after it
	closed    bool
}

func newCommitRecovery() *commitRecovery {
	return &commitRecovery{recovered: make(chan struct{})}
}

// OnCommitted implements sluice.HookCommitted.
func (c *commitRecovery) OnCommitted(offs []sluice.Offset, _ time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		if c.failed == nil {
			c.failed = err
		}
	case c.failed != nil && len(offs) > 0 && !c.closed:
		c.closed = true
		close(c.recovered)
	}
}

// Recovered is closed once a commit of offsets succeeded after a failed
// one.
func (c *commitRecovery) Recovered() <-chan struct{} { return c.recovered }

// Failed returns the first failed commit's error, nil if none failed.
func (c *commitRecovery) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// wantFailedByFault fails t unless the first failed commit wraps the
// UNKNOWN_SERVER_ERROR that failNextCommit makes the coordinator answer.
func (c *commitRecovery) wantFailedByFault(t *testing.T) {
	t.Helper()
	if err := c.Failed(); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("the failed commit = %v, want an error wrapping %v (failNextCommit's)", err, kerr.UnknownServerError)
	}
}
