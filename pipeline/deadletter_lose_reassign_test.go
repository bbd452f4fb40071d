package pipeline_test

import (
	"testing"
	"testing/synctest"
)

// A partition lost while its dead letters' outcomes are outstanding (one
// of them failing) commits nothing; assigned again to the same Run, its
// records are dead-lettered again and commit once stored, and Run goes
// on.
func TestDeadLettersOutstandingAtLossThenReassigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startDeferring(t, 3)
		lost := make(chan struct{})
		go func() {
			defer close(lost)
			h.Lose("t", 0)
		}()
		synctest.Wait()
		d.settle(nil, 0)
		d.settle(errFlaky, 1)
		d.settle(nil, 2)
		<-lost
		expect(t, h, d, "0 1 2", -1)
		h.Assign("t", 0)
		synctest.Wait()
		if got := d.String(); got != "0 1 2 0 1 2" {
			t.Fatalf("dead-letter calls %q, want %q", got, "0 1 2 0 1 2")
		}
		d.settle(nil, 0, 1, 2)
		h.WaitCommitted("t", 0, 3)
		if err := h.Stop(); err != nil {
			t.Fatalf("Stop returned %v", err)
		}
	})
}
