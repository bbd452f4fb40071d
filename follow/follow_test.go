package follow_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// Records at or above the leaders' offset are not processed; each step of
// the leaders releases exactly up to it, and the follower commits exactly
// what it processed.
func TestHoldsUntilLeadersCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders), rec.build)
		sendAndAssign(t, fake, 10, 0)
		settle()
		if got := rec.offsets(tp("orders", 0)); len(got) != 0 {
			t.Fatalf("processed %v before the leaders committed anything", got)
		}
		for _, step := range []int64{3, 7, 10} {
			leaders.set("orders", 0, step)
			settle()
			if got, want := rec.offsets(tp("orders", 0)), span(0, step); !slices.Equal(got, want) {
				t.Fatalf("leaders at %d: processed %v, want %v", step, got, want)
			}
			if got := fake.Committed("orders", 0); got != step {
				t.Fatalf("leaders at %d: committed %d, want %d", step, got, step)
			}
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		rec.check(t)
	})
}

// A partition whose leaders are ahead is delivered as if there were no
// follower; one whose leaders committed nothing gets nothing, and neither
// holds the other up.
func TestPartitionsAreIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.set("orders", 0, 100)
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders), rec.build)
		sendAndAssign(t, fake, 5, 0, 1)
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 5)) {
			t.Fatalf("partition 0 processed %v, want [0 1 2 3 4]", got)
		}
		if got := rec.offsets(tp("orders", 1)); len(got) != 0 {
			t.Fatalf("partition 1 processed %v with no leader commit", got)
		}
		if got := fake.Committed("orders", 1); got != -1 {
			t.Fatalf("partition 1 committed %d, want nothing (-1)", got)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		rec.check(t)
	})
}

// Records that arrive while others are held queue behind them and reach
// the graph in offset order, once each, when the leaders pass them.
func TestLateRecordsQueueBehindHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.set("orders", 0, 2)
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders), rec.build)
		sendAndAssign(t, fake, 4, 0)
		settle()
		if err := fake.Send("orders", 0, values(4)...); err != nil { // offsets 4..7
			t.Fatal(err)
		}
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 2)) {
			t.Fatalf("processed %v, want [0 1]", got)
		}
		leaders.set("orders", 0, 8)
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 8)) {
			t.Fatalf("processed %v, want [0..7] once each, in order", got)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		rec.check(t)
	})
}

// A revoked partition's held records are dropped, never processed nor
// committed past; assigned again, it resumes at the committed offset and
// gets each record once.
func TestRevokeDropsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.set("orders", 0, 4)
		hooks := &statuses{}
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders, follow.WithHook(hooks)), rec.build)
		sendAndAssign(t, fake, 10, 0)
		settle()
		if got := hooks.last()[tp("orders", 0)]; got.Held == 0 {
			t.Fatalf("status %+v: want held records before the revoke", got)
		}
		if err := fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		if got := fake.Committed("orders", 0); got != 4 {
			t.Fatalf("committed %d after the revoke, want 4", got)
		}
		if got := hooks.last()[tp("orders", 0)]; got.Owned || got.Held != 0 {
			t.Fatalf("status after the revoke %+v: want Owned false, Held 0", got)
		}
		leaders.set("orders", 0, 10)
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 10)) {
			t.Fatalf("processed %v, want [0..9] once each", got)
		}
		if got := fake.Committed("orders", 0); got != 10 {
			t.Fatalf("committed %d, want 10", got)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		rec.check(t)
	})
}

// A lost partition's held records are dropped too, and a shutdown while
// records are held returns nil having committed what was processed.
func TestLoseAndShutdownDropHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.set("orders", 0, 3)
		leaders.set("orders", 1, 5)
		hooks := &statuses{}
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders, follow.WithHook(hooks)), rec.build)
		sendAndAssign(t, fake, 10, 0, 1)
		settle()
		if err := fake.Lose("orders", 0); err != nil {
			t.Fatal(err)
		}
		if got := hooks.last()[tp("orders", 0)]; got.Owned {
			t.Fatalf("status after the loss %+v: want Owned false", got)
		}
		leaders.set("orders", 0, 10)
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 3)) {
			t.Fatalf("lost partition processed %v, want [0 1 2] and nothing after the loss", got)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		if got := fake.Committed("orders", 1); got != 5 {
			t.Fatalf("partition 1 committed %d at shutdown, want 5", got)
		}
		if got := hooks.last()[tp("orders", 1)]; got.Owned {
			t.Fatalf("status after the shutdown %+v: want Owned false", got)
		}
		rec.check(t)
	})
}

// With a runtime that pauses for backpressure too (a queue of 2 and a
// slow stage), held records and the runtime's pauses combine: every
// record is processed exactly once, in order, never past the leaders.
func TestBackpressureAndLeadersCombine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		rec := newRecorder(leaders)
		rec.gate = make(chan struct{})
		run := testkit.Start(t, newFollower(t, fake, leaders), rec.build, pipeline.WithPartitionQueue(2))
		sendAndAssign(t, fake, 200, 0)
		for next := int64(0); next < 200; next += 25 {
			leaders.set("orders", 0, next+25)
			settle()
			for range 25 {
				rec.gate <- struct{}{}
			}
			synctest.Wait()
			if got, want := rec.offsets(tp("orders", 0)), span(0, next+25); !slices.Equal(got, want) {
				t.Fatalf("leaders at %d: processed %v, want %v", next+25, got, want)
			}
		}
		select {
		case rec.gate <- struct{}{}:
			t.Fatal("a record past the leaders reached the stage")
		default:
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		if got := fake.Committed("orders", 0); got != 200 {
			t.Fatalf("committed %d, want 200", got)
		}
		rec.check(t)
	})
}

// A failing read keeps the offsets read before: records below them go on,
// nothing past them, and the next successful read releases the rest.
func TestFailedReadKeepsPreviousOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		leaders := newStubLeaders()
		leaders.set("orders", 0, 2)
		rec := newRecorder(leaders)
		run := testkit.Start(t, newFollower(t, fake, leaders), rec.build)
		sendAndAssign(t, fake, 6, 0)
		settle()
		leaders.fail(errors.New("coordinator not available"))
		leaders.set("orders", 0, 6) // not readable yet
		settle()
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 2)) {
			t.Fatalf("processed %v while reads failed, want [0 1]", got)
		}
		leaders.fail(nil)
		settle()
		if got := rec.offsets(tp("orders", 0)); !slices.Equal(got, span(0, 6)) {
			t.Fatalf("processed %v after reads recovered, want [0..5]", got)
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		rec.check(t)
	})
}
