package produce_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
)

// A graceful revoke drains the stage: the revoke completes only once
// every outstanding delivery report arrived, and commits all of them.
func TestRevokeWaitsForOutstandingReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 4)...))
		synctest.Wait()
		revoked := inBackground(func() error { return f.Revoke("in", 0) })
		synctest.Wait()
		if returned(t, revoked) {
			t.Fatal("the revoke completed with 4 reports outstanding")
		}

		c.release("v0", "v1")
		synctest.Wait()
		if returned(t, revoked) {
			t.Fatal("the revoke completed with 2 reports outstanding")
		}
		c.release("v2", "v3")
		must(t, <-revoked)
		if got := f.Committed("in", 0); got != 4 {
			t.Errorf("committed %d on revoke, want 4", got)
		}
		must(t, r.Stop(t))
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending, want 0", n)
		}
	})
}

// A delivery failing while a revoke drains the stage does not stop Run
// (an error while the partition is being revoked only leaves its record
// uncommitted, docs/lifecycle.md "Fatal error"): the revoke completes
// once every report arrived and commits up to the failed record, not
// past it.
func TestFailedReportDuringRevokeStaysUncommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		c.fail["v1"] = errors.New("broker said no")
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, 3)...))
		synctest.Wait()
		revoked := inBackground(func() error { return f.Revoke("in", 0) })
		synctest.Wait()
		c.release("v0", "v1")
		synctest.Wait()
		if returned(t, revoked) {
			t.Fatal("the revoke completed with v2's report outstanding")
		}
		c.release("v2")
		must(t, <-revoked)
		if got := f.Committed("in", 0); got != 1 {
			t.Errorf("committed %d on revoke, want 1 (v0 delivered, v1 failed)", got)
		}
		must(t, r.Stop(t))
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending, want 0", n)
		}
	})
}

// When the partition is lost while the stage waits out a full queue, it
// produces nothing more of the chunk (toMsg is not even called for the
// rest, the refused value is not sent again) and still reads the
// outstanding reports before the graph exits; nothing is committed.
func TestLossStopsProducingAndDrainsReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		c.refuse["v2"] = 1 << 30 // full for good
		var converted []string   // on the stage's goroutine, read after Run
		toMsg := func(rec pipeline.Record) (pipeline.Message, error) {
			converted = append(converted, string(rec.Value))
			return recordMessage(rec)
		}
		f, r := run(t, produceTo(c, tr, toMsg))
		must(t, f.Send("in", 0, values(0, 5)...))
		synctest.Wait()
		if got := c.sentValues(); !slices.Equal(got, []string{"v0", "v1"}) {
			t.Fatalf("produced %v, want [v0 v1]", got)
		}

		lost := inBackground(func() error { return f.Lose("in", 0) })
		synctest.Wait()
		if returned(t, lost) {
			t.Fatal("the lost graph exited with 2 reports outstanding")
		}
		c.release("v0", "v1")
		must(t, <-lost)
		must(t, r.Stop(t))
		if got := len(c.triesOf("v2")); got != 1 {
			t.Errorf("v2 sent %d times, want once (refused, then the partition was lost)", got)
		}
		if got := c.sentValues(); !slices.Equal(got, []string{"v0", "v1"}) {
			t.Errorf("produced %v, want [v0 v1]", got)
		}
		if !slices.Equal(converted, []string{"v0", "v1", "v2"}) {
			t.Errorf("toMsg called for %v, want [v0 v1 v2]", converted)
		}
		if got := f.Committed("in", 0); got != -1 {
			t.Errorf("committed %d for a lost partition, want nothing (-1)", got)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending, want 0", n)
		}
	})
}

// A loss while the stage waits at its outstanding bound stops it there
// too: nothing past the bound is produced, every report is still read.
func TestLossAtTheBoundStopsProducing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = produce.ReportBuffer
		tr := produce.NewTracker(names)
		c := newStub(tr, true)
		f, r := run(t, produceTo(c, tr, recordMessage))
		must(t, f.Send("in", 0, values(0, bound+3)...))
		// Pacing feeds a new graph one chunk, and twice as much each time
		// nothing completes for a while: wait in the bubble's time until
		// only the bound holds the messages back.
		time.Sleep(time.Minute)
		synctest.Wait()
		lost := inBackground(func() error { return f.Lose("in", 0) })
		synctest.Wait()
		if returned(t, lost) {
			t.Fatal("the lost graph exited with every report outstanding")
		}
		c.deliverAll()
		must(t, <-lost)
		must(t, r.Stop(t))
		if got := len(c.sentValues()); got != bound {
			t.Errorf("produced %d messages, want %d (none after the loss)", got, bound)
		}
		if got := f.Committed("in", 0); got != -1 {
			t.Errorf("committed %d for a lost partition, want nothing (-1)", got)
		}
		if _, _, overflow := c.counts(); overflow != 0 {
			t.Errorf("%d reports found their channel full, want 0", overflow)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("tracker has %d reports pending, want 0", n)
		}
	})
}
