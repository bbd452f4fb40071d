package produce_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
)

// A value's record commits only once its own delivery report succeeded,
// and in offset order: reports arriving out of order (messages of one
// stage go to several output partitions) move nothing until the first
// one came.
func TestValueCommitsOnlyAfterItsReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 3)...))
		synctest.Wait()
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, 3)) {
			t.Fatalf("produced %v, want %v", got, valueNames(0, 3))
		}

		c.release("v2", "v1")
		time.Sleep(5 * time.Second) // the bubble's clock: several commit intervals
		if got := f.Committed("in", 0); got != -1 {
			t.Fatalf("committed %d with v0's report outstanding, want nothing (-1)", got)
		}
		c.release("v0")
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		if got := f.Committed("in", 0); got != 3 {
			t.Errorf("committed %d after Stop, want 3", got)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending, want 0", n)
		}
	})
}

// The stage never has more than ReportBuffer messages outstanding: with
// every report held back it produces exactly that many and waits; each
// report lets exactly one more through. So a report always finds room in
// the stage's channel (the library's delivery goroutine never blocks).
func TestOutstandingNeverExceedsTheReportBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = produce.ReportBuffer
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		f, r := run(t, produceTo(c, tr, recordMessage))
		n := bound + 6
		must(t, f.Send("in", 0, values(0, n)...))
		// Pacing feeds a new graph one chunk, and twice as much each time
		// nothing completes for a while: wait in the bubble's time until
		// only the bound holds the messages back.
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(c.sentValues()); got != bound {
			t.Fatalf("produced %d messages with every report held, want %d", got, bound)
		}

		c.releaseFirst(1)
		synctest.Wait()
		if got := len(c.sentValues()); got != bound+1 {
			t.Fatalf("produced %d messages after one report, want %d", got, bound+1)
		}
		if held, maxInFlight, _ := c.counts(); held != bound || maxInFlight != bound {
			t.Fatalf("%d held, at most %d in flight; want %d and %d", held, maxInFlight, bound, bound)
		}

		c.deliverAll()
		f.WaitCommitted(t, "in", 0, int64(n))
		must(t, r.Stop(t))
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, n)) {
			t.Errorf("produced %d messages %v..., want %d in order", len(got), got[:3], n)
		}
		if _, maxInFlight, overflow := c.counts(); maxInFlight != bound || overflow != 0 {
			t.Errorf("at most %d in flight, %d reports found their channel full; want %d and 0", maxInFlight, overflow, bound)
		}
	})
}

// A message the client refuses with a full queue is sent again, at once
// after a delivery report, else after QueueFullWait; never dropped, never
// sent twice, and the values after it wait for it.
func TestQueueFullIsRetriedNeverDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		c.refuse["v1"] = 3
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 3)...))
		synctest.Wait()
		t0 := time.Now()
		if got := c.sentValues(); !slices.Equal(got, []string{"v0"}) {
			t.Fatalf("produced %v while v1 is refused, want [v0]", got)
		}

		c.release("v0") // a report: v1 is tried again at once
		time.Sleep(time.Second)
		want := []time.Time{t0, t0, t0.Add(produce.QueueFullWait), t0.Add(2 * produce.QueueFullWait)}
		if got := c.triesOf("v1"); !slices.Equal(got, want) {
			t.Errorf("v1 sent at %v, want at %v", offsets(got, t0), offsets(want, t0))
		}
		if got := c.sentValues(); !slices.Equal(got, valueNames(0, 3)) {
			t.Errorf("produced %v, want %v", got, valueNames(0, 3))
		}
		c.deliverAll()
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		if got := len(c.triesOf("v2")); got != 1 {
			t.Errorf("v2 sent %d times, want 1", got)
		}
	})
}

// offsets returns each time as its distance from t0, for messages.
func offsets(ts []time.Time, t0 time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(t0))
	}
	return ds
}

// A failed delivery report stops Run with a *StageError naming the
// record's topic, partition and offset and wrapping the library's error;
// what was delivered before it is committed, nothing from it on.
func TestFailedReportStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, false)
		errBroker := errors.New("broker said no")
		c.fail["v3"] = errBroker
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 6)...))
		err := r.Wait(t)
		checkStageError(t, err, 3, "delivery to out failed: broker said no")
		if !errors.Is(err, errBroker) {
			t.Errorf("Run's error %v does not wrap the delivery error", err)
		}
		if got := f.Committed("in", 0); got != 3 {
			t.Errorf("committed %d, want 3 (v0..v2 delivered, v3 failed)", got)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending after Run, want 0", n)
		}
	})
}

// Send failing with an error other than a full queue stops Run at the
// value's offset.
func TestSendErrorStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, false)
		c.sendErr["v1"] = errFatal
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 3)...))
		err := r.Wait(t)
		checkStageError(t, err, 1, "producing to out: fatal")
		if got := c.sentValues(); !slices.Equal(got, []string{"v0"}) {
			t.Errorf("produced %v, want [v0]", got)
		}
		if got := f.Committed("in", 0); got != 1 {
			t.Errorf("committed %d, want 1 (v0 delivered)", got)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending after Run, want 0", n)
		}
	})
}

// When toMsg fails, Run stops but only once the stage read the reports of
// what it had produced (the library must never block on its channel);
// those values are committed.
func TestStageFailureWaitsForOutstandingReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		errEncode := pipeline.Permanent(errors.New("cannot encode"))
		toMsg := func(rec pipeline.Record) (pipeline.Message, error) {
			if string(rec.Value) == "v2" {
				return pipeline.Message{}, errEncode
			}
			return recordMessage(rec)
		}
		f, r := run(t, produceTo(c, tr, toMsg))
		must(t, f.Send("in", 0, values(0, 4)...))
		synctest.Wait()
		select {
		case <-r.Done():
			t.Fatal("Run returned with two reports outstanding")
		default:
		}
		if got := c.sentValues(); !slices.Equal(got, []string{"v0", "v1"}) {
			t.Fatalf("produced %v, want [v0 v1]", got)
		}
		c.release("v0", "v1")
		err := r.Wait(t)
		checkStageError(t, err, 2, "cannot encode")
		if got := f.Committed("in", 0); got != 2 {
			t.Errorf("committed %d, want 2", got)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending after Run, want 0", n)
		}
	})
}

// A value toMsg finds invalid goes to the dead-letter destination and is
// not produced; the others are, and everything commits.
func TestInvalidValueIsDeadLetteredNotProduced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, false)
		toMsg := func(rec pipeline.Record) (pipeline.Message, error) {
			if string(rec.Value) == "v1" {
				return pipeline.Message{}, pipeline.Invalid(errors.New("not an order"))
			}
			return recordMessage(rec)
		}
		var dead []int64
		dl := pipeline.WithDeadLetter(func(_ context.Context, d pipeline.DeadLetter) error {
			dead = append(dead, d.Record.Offset)
			return nil
		})
		f, r := run(t, produceTo(c, tr, toMsg), dl)
		must(t, f.Send("in", 0, values(0, 3)...))
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		if got := c.sentValues(); !slices.Equal(got, []string{"v0", "v2"}) {
			t.Errorf("produced %v, want [v0 v2]", got)
		}
		if !slices.Equal(dead, []int64{1}) {
			t.Errorf("dead-lettered offsets %v, want [1]", dead)
		}
	})
}
