package produce_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
)

// checkCommitted checks in/0's committed offset once everything settled.
func checkCommitted(t *testing.T, committed func() int64, want int64, when string) {
	t.Helper()
	synctest.Wait()
	if got := committed(); got != want {
		t.Fatalf("%s: in/0 committed at %d, want %d", when, got, want)
	}
}

// Under Run, a partition's dead letters are handed to the client one
// after the other, in offset order, without waiting for each other's
// delivery reports; a record commits only once its report arrived and
// every record before it finished, whatever order the reports come in.
func TestDeadLettersGoOutBeforeTheirReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, c, dl := newDeadLetter(true)
		f, r := run(t, producertest.AllInvalid, pipeline.WithDeadLetter(dl))
		must(t, f.Send("in", 0, values(0, 6)...))
		synctest.Wait()
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, 6)) {
			t.Fatalf("handed to the client before any report: %v, want %v (all, in offset order)", got, valueNames(0, 6))
		}
		committed := func() int64 { return f.Committed("in", 0) }
		checkCommitted(t, committed, -1, "no report yet")
		c.release("v3", "v1")
		checkCommitted(t, committed, -1, "reports of 3 and 1 only")
		c.release("v0")
		checkCommitted(t, committed, 2, "reports of 0, 1 and 3")
		c.release("v2")
		checkCommitted(t, committed, 4, "reports of 0 to 3")
		c.release("v5")
		checkCommitted(t, committed, 4, "reports of 0 to 3 and 5")
		c.release("v4")
		checkCommitted(t, committed, 6, "every report")
		must(t, r.Stop(t))
		checkNonePending(t, tr)
	})
}

// A partition has at most engine.MaxOutstandingDeadLetters dead letters
// handed over without their delivery report; each report lets one more
// go.
func TestDeadLettersOutstandingAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = engine.MaxOutstandingDeadLetters
		_, c, dl := newDeadLetter(true)
		f, r := run(t, producertest.AllInvalid, pipeline.WithDeadLetter(dl))
		must(t, f.Send("in", 0, values(0, limit+10)...))
		checkBoundedByReports(t, c, "dead letters", limit, 3)
		if got := f.Committed("in", 0); got != 3 {
			t.Fatalf("in/0 committed at %d after the first 3 reports, want 3", got)
		}
		c.deliverAll()
		f.WaitCommitted(t, "in", 0, limit+10)
		must(t, r.Stop(t))
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, limit+10)) {
			t.Errorf("handed over %d dead letters, want %d in offset order", len(got), limit+10)
		}
		if _, maxInFlight, overflow := c.counts(); maxInFlight != limit || overflow != 0 {
			t.Errorf("at most %d in flight, %d reports found their channel full; want %d and 0", maxInFlight, overflow, limit)
		}
	})
}

// A dead letter whose delivery fails while later ones are outstanding
// holds the commit at its record; once every outstanding report arrived
// it is produced again (Run's retry policy) and, delivered, lets the
// commit move past the records after it.
func TestDeadLetterFailingMidwayIsRetriedAfterTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, dl := newDeadLetter(true)
		errTimedOut := errors.New("message timed out")
		c.mu.Lock()
		c.fail["v2"] = errTimedOut // transient: not marked permanent
		c.mu.Unlock()
		f, r := run(t, producertest.AllInvalid, pipeline.WithDeadLetter(dl))
		must(t, f.Send("in", 0, values(0, 6)...))
		synctest.Wait()
		c.deliverAll()  // v2's report fails, the others' succeed
		synctest.Wait() // the retry of v2 waits for its backoff
		if got := f.Committed("in", 0); got != 2 {
			t.Fatalf("in/0 committed at %d while the dead letter of offset 2 failed, want 2", got)
		}
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, 6)) {
			t.Fatalf("handed over %v before the retry, want %v", got, valueNames(0, 6))
		}
		c.mu.Lock()
		delete(c.fail, "v2")
		c.mu.Unlock()
		f.WaitCommitted(t, "in", 0, 6)
		must(t, r.Stop(t))
		if got, want := c.sentValues(), append(valueNames(0, 6), "v2"); !slices.Equal(got, want) {
			t.Errorf("handed over %v, want %v (v2 again after the others)", got, want)
		}
	})
}

// A dead letter that cannot be delivered stops Run with a StageError at
// its record, although dead letters after it were delivered: the
// partition commits exactly up to it.
func TestDeadLetterFailingForGoodStopsRunAtItsRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, dl := newDeadLetter(true)
		c.mu.Lock()
		c.fail["v2"] = errFatal
		c.mu.Unlock()
		f, r := run(t, producertest.AllInvalid, pipeline.WithDeadLetter(dl))
		must(t, f.Send("in", 0, values(0, 6)...))
		synctest.Wait()
		c.deliverAll() // v2's report fails, the others' succeed
		err := r.Wait(t)
		se := stageError(t, err)
		if se.Stage != "decode" || se.Offset != 2 || !errors.Is(err, sluice.ErrNotDeadLettered) || !errors.Is(err, errFatal) {
			t.Fatalf("Run returned %v, want a StageError of decode at offset 2 wrapping ErrNotDeadLettered and the delivery error", err)
		}
		if got := f.Committed("in", 0); got != 2 {
			t.Fatalf("in/0 committed at %d, want 2", got)
		}
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, 6)) {
			t.Errorf("handed over %v, want %v", got, valueNames(0, 6))
		}
	})
}
