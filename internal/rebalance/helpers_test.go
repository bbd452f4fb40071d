package rebalance

import (
	"strings"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
)

// sendsOnlyOnceAnswered checks that no commit is sent while c stays
// unanswered for wait (fake time), and that once c is answered the next
// commit sends want; it answers that one too.
func (h *harness) sendsOnlyOnceAnswered(c *commitCall, wait time.Duration, want ...sluice.Offset) {
	h.t.Helper()
	time.Sleep(wait)
	synctest.Wait()
	h.noCommit("while an earlier commit is unanswered")
	c.ok()
	next := h.nextCommit()
	wantOffsets(h.t, "the commit once the earlier one was answered", next.offs, want...)
	next.ok()
}

// commitOf has the group report offs and waits for the commit the next
// interval sends.
func (h *harness) commitOf(offs ...sluice.Offset) *commitCall {
	h.t.Helper()
	h.g.report(offs...)
	return h.nextCommit()
}

// stopOK stops Run and fails the test unless it returned nil.
func (h *harness) stopOK() {
	h.t.Helper()
	if err := h.stop(); err != nil {
		h.t.Fatal(err)
	}
}

// stopAsync cancels Run without waiting for it; the channel gets what Run
// returned.
func (h *harness) stopAsync() <-chan error {
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	return stopped
}

// setFinal sets the offsets the group's Shutdown returns: what the final
// commit sends.
func (h *harness) setFinal(offs ...sluice.Offset) {
	h.g.mu.Lock()
	h.g.shutdown = offs
	h.g.mu.Unlock()
}

// calls returns the backend calls of b so far.
func (b *fakeBackend) calls() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.events, " ")
}
