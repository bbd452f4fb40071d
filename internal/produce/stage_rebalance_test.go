package produce_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// A graceful revoke drains the stage: the revoke completes only once
// every outstanding delivery report arrived, and commits what was
// delivered. A delivery failing while the revoke drains does not stop
// Run (an error while the partition is being revoked only leaves its
// record uncommitted, docs/lifecycle.md "Fatal error"): the revoke
// commits up to the failed record, not past it.
func TestRevokeWaitsForOutstandingReports(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n         int
		fail      string     // the value whose delivery fails, if any
		releases  [][]string // the reports released, a step at a time
		committed int64
	}{
		{"every report delivered commits all", 4, "", [][]string{{"v0", "v1"}, {"v2", "v3"}}, 4},
		{"a failed report stays uncommitted", 3, "v1", [][]string{{"v0", "v1"}, {"v2"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(true)
				if tc.fail != "" {
					c.fail[tc.fail] = errors.New("broker said no")
				}
				f, r := c.started(t, tc.n, recordMessage)
				revoked := inBackground(func() error { return f.Revoke("in", 0) })
				for _, vs := range tc.releases {
					synctest.Wait()
					if returned(t, revoked) {
						t.Fatalf("the revoke completed before the reports of %v", vs)
					}
					c.release(vs...)
				}
				must(t, <-revoked)
				checkInCommitted(t, f, tc.committed, "on revoke")
				must(t, r.Stop(t))
				checkNonePending(t, c.tr)
			})
		})
	}
}

// When the partition is lost while the stage waits out a full queue, it
// produces nothing more of the chunk (the refused value is not sent
// again, and toMsg is not even called for the rest, unless the client
// takes chunks: then the chunk was converted before it was sent) and still reads the
// outstanding reports before the graph exits; nothing is committed.
func TestLossStopsProducingAndDrainsReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		c.refuse["v2"] = 1 << 30 // full for good
		var converted []string   // on the stage's goroutine, read after Run
		toMsg := func(rec sluice.Record) (sluice.Message, error) {
			converted = append(converted, string(rec.Value))
			return recordMessage(rec)
		}
		f, r := c.started(t, 5, toMsg)
		checkSent(t, c, "v0", "v1")

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
		checkSent(t, c, "v0", "v1")
		want := []string{"v0", "v1", "v2"}
		if c.chunks {
			want = valueNames(0, 5) // a chunk is converted before it is sent
		}
		if !slices.Equal(converted, want) {
			t.Errorf("toMsg called for %v, want %v", converted, want)
		}
		checkInCommitted(t, f, -1, "nothing for a lost partition")
		checkNonePending(t, c.tr)
	})
}

// A loss while the stage waits at its outstanding bound stops it there
// too: nothing past the bound is produced, every report is still read.
func TestLossAtTheBoundStopsProducing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = produce.MinReportBuffer
		c := newStage(true)
		f, r := c.start(t, bound+3, recordMessage)
		waitOutPacing() // only the bound holds the rest back
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
		checkInCommitted(t, f, -1, "nothing for a lost partition")
		if _, _, overflow := c.counts(); overflow != 0 {
			t.Errorf("%d reports found their channel full, want 0", overflow)
		}
		checkNonePending(t, c.tr)
	})
}
