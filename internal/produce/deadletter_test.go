package produce_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// dlqName is the user's method, as a backend names it in errors.
const dlqName = "stub: Producer.DeadLetter"

// newDeadLetter returns a tracker, a stub (holding reports when hold) and
// the dead-letter destination producing to "dlq" through them.
func newDeadLetter(hold bool) (*produce.Tracker, *stub, func(context.Context, sluice.DeadLetter) error) {
	c := newStage(hold)
	return c.tr, c, produce.DeadLetter(c, c.tr, dlqName, "dlq")
}

// deadLetterHeld starts a dead letter of invalidRecord through a
// destination whose client holds every delivery report, and returns once
// it waits for its report; done gets what the call returned.
func deadLetterHeld(t *testing.T) (tr *produce.Tracker, c *stub, done <-chan error) {
	tr, c, dl := newDeadLetter(true)
	done = inBackground(func() error { return dl(t.Context(), invalidRecord()) })
	synctest.Wait()
	return tr, c, done
}

// checkErr checks err's text and whether it is marked permanent.
func checkErr(t *testing.T, err error, want string, permanent bool) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("dead letter returned %v, want %q", err, want)
	}
	if got := sluice.IsPermanent(err); got != permanent {
		t.Errorf("IsPermanent(%v) = %v, want %v", err, got, permanent)
	}
}

// checkClosedErr checks that err, a dead letter's error, says want, is
// permanent and wraps ErrClosed.
func checkClosedErr(t *testing.T, err error, want string) {
	t.Helper()
	checkErr(t, err, want, true)
	if !errors.Is(err, errClosed) {
		t.Errorf("dead letter's error %v does not wrap ErrClosed", err)
	}
}

// A dead letter is produced to its topic with the record's timestamp and
// the dead-letter message, and the call returns only once its delivery
// report arrived.
func TestDeadLetterReturnsOnceDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(true)
		d := invalidRecord()
		done := inBackground(func() error { return dl(t.Context(), d) })
		synctest.Wait()
		if returned(t, done) {
			t.Fatal("the dead letter returned before its delivery report")
		}
		c.mu.Lock()
		sent := slices.Clone(c.sent)
		c.mu.Unlock()
		want := produce.DeadLetterMessage(d)
		if len(sent) != 1 || sent[0].Topic != "dlq" || !sent[0].Timestamp.Equal(d.Record.Timestamp) ||
			sent[0].Ticket != (stagekit.Ticket{}) || !slices.EqualFunc(sent[0].Message.Headers, want.Headers, headerEqual) ||
			string(sent[0].Message.Value) != "not json" || string(sent[0].Message.Key) != "k1" {
			t.Errorf("sent %+v, want the dead-letter message to dlq at %v with no ticket", sent, d.Record.Timestamp)
		}
		c.release("not json")
		must(t, <-done)
		checkNonePending(t, tr)
	})
}

// An empty topic fails every call with a permanent error naming the
// method; nothing is produced.
func TestDeadLetterEmptyTopic(t *testing.T) {
	c := newStage(false)
	dl := produce.DeadLetter(c, c.tr, dlqName, "")
	checkErr(t, dl(t.Context(), invalidRecord()), "stub: Producer.DeadLetter: the topic is empty", true)
	checkSent(t, c)
}

// A full queue is waited out, QueueFullWait between tries, never
// dropped.
func TestDeadLetterWaitsOutAFullQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, dl := newDeadLetter(false)
		c.refuse["not json"] = 2
		t0 := time.Now()
		must(t, dl(t.Context(), invalidRecord()))
		want := []time.Time{t0, t0.Add(produce.QueueFullWait), t0.Add(2 * produce.QueueFullWait)}
		if got := c.triesOf("not json"); !slices.Equal(got, want) {
			t.Errorf("sent at %v, want at %v", offsets(got, t0), offsets(want, t0))
		}
	})
}

// While the queue stays full, the call returns when its context ends,
// with the context's cause.
func TestDeadLetterFullQueueUntilCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(false)
		c.refuse["not json"] = 1 << 30
		errDrain := errors.New("drain timed out")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(errDrain) })
		if err := dl(ctx, invalidRecord()); err != errDrain {
			t.Errorf("dead letter returned %v, want the context's cause %v", err, errDrain)
		}
		checkNonePending(t, tr)
	})
}

// Once a message was handed over, the call waits for its report even
// past its context's end (leaving would lose the report), and returns
// what the report says.
func TestDeadLetterWaitsForItsReportPastCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, dl := newDeadLetter(true)
		ctx, cancel := context.WithCancel(t.Context())
		done := inBackground(func() error { return dl(ctx, invalidRecord()) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if returned(t, done) {
			t.Fatal("the dead letter returned at its context's end with its report outstanding")
		}
		c.release("not json")
		must(t, <-done)
	})
}

// A send blocked in the library until the context ends reports the
// context's end: the call returns the context's cause, not a delivery
// failure.
func TestDeadLetterBlockedSendEndsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(false)
		c.block["not json"] = true
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		if err := dl(ctx, invalidRecord()); err != context.Canceled {
			t.Errorf("dead letter returned %v, want %v", err, context.Canceled)
		}
		checkNonePending(t, tr)
	})
}

// Send and delivery errors name the topic and go through Classify:
// permanent when producing again cannot help, retryable otherwise.
func TestDeadLetterErrorsAreClassified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(false)
		c.sendErr["not json"] = errFatal
		checkErr(t, dl(t.Context(), invalidRecord()), "dead letter to dlq: fatal", true)

		delete(c.sendErr, "not json")
		c.fail["not json"] = errFatal
		checkErr(t, dl(t.Context(), invalidRecord()), "dead letter to dlq: fatal", true)

		c.fail["not json"] = errors.New("timed out")
		checkErr(t, dl(t.Context(), invalidRecord()), "dead letter to dlq: timed out", false)
		checkNonePending(t, tr)
	})
}

// An event that is not a delivery report is an error, and does not leave
// the message pending in the tracker.
func TestDeadLetterNoDeliveryReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, done := deadLetterHeld(t)
		c.releaseAsOther("not json")
		checkErr(t, <-done, "dead letter to dlq: no delivery report", false)
		checkNonePending(t, tr)
	})
}

// Close giving up on a dead letter fails the call permanently with
// ErrClosed, and Close's error names it by the record it came from.
func TestDeadLetterGivenUpByClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, done := deadLetterHeld(t)
		closeErr := tr.Close(c.closeSteps())
		want := "closing the producer: 1 message undelivered after 5s (to dlq from orders/7@1234567890123)"
		if closeErr == nil || closeErr.Error() != want {
			t.Errorf("Close returned %v, want %q", closeErr, want)
		}
		err := <-done
		checkClosedErr(t, err, "dead letter to dlq: producer closed before the message was delivered (message of not json: purged by close)")
	})
}

// When the client closes without reporting the dead letter, the call
// returns at Gone, permanently, with ErrClosed.
func TestDeadLetterNeverReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, done := deadLetterHeld(t)
		steps := c.closeSteps()
		steps.GiveUp = func(context.Context) {} // the library loses it
		if err := tr.Close(steps); err == nil || err.Error() != "closing the producer: 1 message undelivered after 5s" {
			t.Errorf("Close returned %v", err)
		}
		err := <-done
		checkClosedErr(t, err, "dead letter to dlq: producer closed before its delivery was reported")
	})
}

// After Close, a dead letter is not handed to the client: it fails
// permanently with ErrClosed.
func TestDeadLetterAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(false)
		must(t, tr.Close(c.closeSteps()))
		err := dl(t.Context(), invalidRecord())
		checkClosedErr(t, err, "dead letter to dlq: producer closed")
		if n := len(c.triesOf("not json")); n != 0 {
			t.Errorf("Send called %d times after Close, want 0", n)
		}
	})
}
