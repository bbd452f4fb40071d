package follow_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
)

// Records at or above the leaders' offset are not processed; each step of
// the leaders releases exactly up to it, and the follower commits exactly
// what it processed.
func TestHoldsUntilLeadersCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, nil, 10, 0)
		r.wantProcessed(t, "leaders committed nothing", 0, nil)
		for _, step := range []int64{3, 7, 10} {
			r.leaders.set("orders", 0, step)
			settle()
			name := fmt.Sprintf("leaders at %d", step)
			r.wantProcessed(t, name, 0, span(0, step))
			r.wantCommitted(t, name, 0, step)
		}
		r.stop(t)
	})
}

// A partition whose leaders are ahead is delivered as if there were no
// follower; one whose leaders committed nothing gets nothing, and neither
// holds the other up.
func TestPartitionsAreIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 100}, 5, 0, 1)
		r.wantProcessed(t, "leaders ahead", 0, span(0, 5))
		r.wantProcessed(t, "no leader commit", 1, nil)
		r.wantCommitted(t, "no leader commit", 1, -1)
		r.stop(t)
	})
}

// Records that arrive while others are held queue behind them and reach
// the graph in offset order, once each, when the leaders pass them.
func TestLateRecordsQueueBehindHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 2}, 4, 0)
		if err := r.fake.Send("orders", 0, values(4)...); err != nil { // offsets 4..7
			t.Fatal(err)
		}
		settle()
		r.wantProcessed(t, "leaders at 2", 0, span(0, 2))
		r.leaders.set("orders", 0, 8)
		settle()
		r.wantProcessed(t, "leaders at 8, once each, in order", 0, span(0, 8))
		r.stop(t)
	})
}

// A revoked partition's held records are dropped, never processed nor
// committed past; assigned again, it resumes at the committed offset and
// gets each record once.
func TestRevokeDropsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 4}, 10, 0)
		if got := r.hooks.last()[tp("orders", 0)]; got.Held == 0 {
			t.Fatalf("status %+v: want held records before the revoke", got)
		}
		if err := r.fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		r.wantCommitted(t, "after the revoke", 0, 4)
		if got := r.hooks.last()[tp("orders", 0)]; got.Owned || got.Held != 0 {
			t.Fatalf("status after the revoke %+v: want Owned false, Held 0", got)
		}
		r.leaders.set("orders", 0, 10)
		if err := r.fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		r.wantProcessed(t, "assigned again, once each", 0, span(0, 10))
		r.wantCommitted(t, "assigned again", 0, 10)
		r.stop(t)
	})
}

// A lost partition's held records are dropped too, and a shutdown while
// records are held returns nil having committed what was processed.
func TestLoseAndShutdownDropHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 3, 1: 5}, 10, 0, 1)
		if err := r.fake.Lose("orders", 0); err != nil {
			t.Fatal(err)
		}
		if got := r.hooks.last()[tp("orders", 0)]; got.Owned {
			t.Fatalf("status after the loss %+v: want Owned false", got)
		}
		r.leaders.set("orders", 0, 10)
		settle()
		r.wantProcessed(t, "lost, nothing after the loss", 0, span(0, 3))
		r.stop(t)
		r.wantCommitted(t, "at shutdown", 1, 5)
		if got := r.hooks.last()[tp("orders", 1)]; got.Owned {
			t.Fatalf("status after the shutdown %+v: want Owned false", got)
		}
	})
}

// With a runtime that pauses for backpressure too (a queue of 2 and a
// slow stage), held records and the runtime's pauses combine: every
// record is processed exactly once, in order, never past the leaders.
func TestBackpressureAndLeadersCombine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(nil)
		r.rec.gate = make(chan struct{})
		r.start(t, pipeline.WithPartitionQueue(2))
		sendAndAssign(t, r.fake, 200, 0)
		for next := int64(0); next < 200; next += 25 {
			r.leaders.set("orders", 0, next+25)
			settle()
			for range 25 {
				r.rec.gate <- struct{}{}
			}
			synctest.Wait()
			r.wantProcessed(t, fmt.Sprintf("leaders at %d", next+25), 0, span(0, next+25))
		}
		select {
		case r.rec.gate <- struct{}{}:
			t.Fatal("a record past the leaders reached the stage")
		default:
		}
		r.stop(t)
		r.wantCommitted(t, "at shutdown", 0, 200)
	})
}

// A failing read keeps the offsets read before: records below them go on,
// nothing past them, and the next successful read releases the rest.
func TestFailedReadKeepsPreviousOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 2}, 6, 0)
		r.leaders.fail(errors.New("coordinator not available"))
		r.leaders.set("orders", 0, 6) // not readable yet
		settle()
		settle()
		r.wantProcessed(t, "while reads failed", 0, span(0, 2))
		r.leaders.fail(nil)
		settle()
		r.wantProcessed(t, "after reads recovered", 0, span(0, 6))
		r.stop(t)
	})
}
