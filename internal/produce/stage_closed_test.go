package produce_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// Closing the producer while the stage idles fails the stage at once
// with an error wrapping ErrClosed (no record position: no value is
// involved).
func TestCloseFailsAnIdleStage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		_, r := c.started(t, 0, recordMessage)
		must(t, c.tr.Close(c.closeSteps()))
		checkClosedError(t, r.Wait(t), -1)
	})
}

// A value reaching the stage once Close started, while the client is
// still closing, is not handed to the client: it fails at its offset with
// ErrClosed. A client that does not close within CloseGrace makes Close
// return anyway, saying so; Gone is marked once it did close.
func TestValueAfterCloseStartedFailsWithErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		tr := c.tr
		steps := c.closeSteps()
		hang := make(chan struct{})
		steps.CloseClient = func() { <-hang }
		f, r := c.start(t, 0, recordMessage)
		closed := inBackground(func() error { return tr.Close(steps) })
		synctest.Wait()
		if !tr.Closing() {
			t.Fatal("Close did not start")
		}

		must(t, f.Send("in", 0, values(0, 2)...))
		checkClosedError(t, r.Wait(t), 0)
		if got := c.sentValues(); len(got) != 0 || len(c.triesOf("v0")) != 0 {
			t.Errorf("produced %v (Send called %d times for v0) after Close started, want nothing", got, len(c.triesOf("v0")))
		}

		time.Sleep(produce.CloseGrace - time.Nanosecond)
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned before CloseGrace passed")
		default:
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		var closeErr error
		select {
		case closeErr = <-closed:
		default:
			t.Fatal("Close still waits for the client after CloseGrace")
		}
		if want := "closing the producer: the client did not close within 1s"; closeErr == nil || closeErr.Error() != want {
			t.Errorf("Close returned %v, want %q", closeErr, want)
		}
		select {
		case <-tr.Gone():
			t.Error("Gone is marked while the client is still closing")
		default:
		}
		close(hang)
		<-tr.Gone()
	})
}

// Close gives up on what is still outstanding after its flush: each
// failed report fails the value with an error wrapping ErrClosed and the
// library's error, nothing is committed, and Close's error counts and
// names each message in the order the stage read its report.
func TestCloseGivesUpOnOutstandingMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		tr := c.tr
		f, r := c.started(t, 3, recordMessage)

		closeErr := tr.Close(c.closeSteps())
		want := "closing the producer: 3 messages undelivered after 5s " +
			"(to out from in/0@0, to out from in/0@1, to out from in/0@2)"
		if closeErr == nil || closeErr.Error() != want {
			t.Fatalf("Close returned %v, want %q", closeErr, want)
		}
		var ce *sluice.CloseError
		if !errors.As(closeErr, &ce) || ce.Count() != 3 || ce.Unreported != 0 || ce.Client != nil || ce.Timeout != 5*time.Second {
			t.Errorf("Close's error %#v, want a *CloseError of 3 undelivered, 0 unreported, timeout 5s", closeErr)
		}
		if again := tr.Close(c.closeSteps()); again != closeErr {
			t.Errorf("Close again returned %v, want the first call's error", again)
		}

		err := r.Wait(t)
		checkStageError(t, err, 0, "delivery to out failed: producer closed before the message was delivered (message of v0: purged by close)")
		if !errors.Is(err, errClosed) || !errors.Is(err, errGaveUp) {
			t.Errorf("Run's error %v does not wrap both ErrClosed and the library's error", err)
		}
		checkInCommitted(t, f, -1, "nothing")
		checkNonePending(t, tr)
	})
}

// When the library closes without reporting what Close gave up on, Close
// counts those messages as unreported after CloseGrace and the stage,
// woken by Gone, fails saying how many deliveries were never reported.
func TestCloseWithReportsNeverDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		steps := c.closeSteps()
		steps.GiveUp = func(context.Context) {} // the library loses them
		f, r := c.started(t, 2, recordMessage)

		start := time.Now()
		closeErr := c.tr.Close(steps)
		if want := "closing the producer: 2 messages undelivered after 5s"; closeErr == nil || closeErr.Error() != want {
			t.Errorf("Close returned %v, want %q", closeErr, want)
		}
		if d := time.Since(start); d != steps.Timeout+produce.CloseGrace {
			t.Errorf("Close took %v, want the flush timeout plus CloseGrace (%v)", d, steps.Timeout+produce.CloseGrace)
		}
		checkStageError(t, r.Wait(t), -1, "producing to out: producer closed before 2 deliveries were reported")
		checkInCommitted(t, f, -1, "nothing")
	})
}

// Close while the stage waits out a full queue ends the wait: the stage
// fails with ErrClosed instead of retrying, having read the reports it
// had; what was delivered is committed.
func TestCloseEndsAQueueFullWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.refuse["v1"] = 1 << 30
		f, r := c.started(t, 3, recordMessage)
		must(t, c.tr.Close(c.closeSteps()))
		checkClosedError(t, r.Wait(t), -1)
		if got := len(c.triesOf("v1")); got != 2 {
			t.Errorf("v1 sent %d times, want 2 (refused, again after v0's report, then Close)", got)
		}
		checkInCommitted(t, f, 1, "v0 delivered")
	})
}

// A Send blocked in the library (its buffer full) returns when the
// partition is lost: the stage produces nothing more and reads the
// blocked message's failed report before the graph exits.
func TestLossEndsABlockedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.block["v1"] = true
		f, r := c.started(t, 3, recordMessage)
		must(t, f.Lose("in", 0))
		must(t, r.Stop(t))
		checkSent(t, c, "v0", "v1") // v1 accepted failing when the loss ended its Send
		if n := len(c.triesOf("v2")); n != 0 {
			t.Errorf("v2 sent %d times after the loss, want 0", n)
		}
		checkNonePending(t, c.tr)
	})
}

// Close ends a Send that waits in the library for room (the stage's send
// context ends with Close's start): Close does not wait for it, and the
// stage fails with ErrClosed instead of trying again.
func TestCloseEndsABlockedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.blockFull["v0"] = true
		_, r := c.started(t, 2, recordMessage)
		start := time.Now()
		must(t, c.tr.Close(c.closeSteps()))
		if d := time.Since(start); d != 0 {
			t.Errorf("Close took %v with nothing outstanding, want no time", d)
		}
		checkClosedError(t, r.Wait(t), -1)
		checkSent(t, c)
	})
}
