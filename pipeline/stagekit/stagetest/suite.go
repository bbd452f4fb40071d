package stagetest

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// The clauses the suite checks, one subtest each.
const (
	clauseOutputs    = "each input yields its outputs once"
	clausePrefix     = "commits exactly the completed prefix"
	clauseHeld       = "no commit before every derived value completed"
	clauseInvalid    = "invalid values dead-lettered once"
	clauseRevoke     = "revoke drains and Run returns"
	clauseLoss       = "loss cancels and Run returns"
	clauseGoroutines = "no goroutine left"
)

// Run checks that the stage s keeps the ticket contract, each clause in a
// subtest of t named for it (see the package documentation), each in its
// own testing/synctest bubble over a testkit.Harness with a drain timeout
// of 8s. A failure names the stage and the clause. A description that is
// not usable (see [Stage]) fails t at once. Run must not be called from
// inside a synctest bubble.
func Run[T, U any](t *testing.T, s Stage[T, U]) {
	t.Helper()
	if err := s.check(); err != nil {
		t.Fatalf("stagetest: %s: %v", s.Name, err)
	}
	p := s.plan()
	for _, c := range []struct {
		clause string
		skip   string
		fn     func(*testing.T, *Stage[T, U], string)
	}{
		{clauseOutputs, needsOutputs(&s), checkOutputs[T, U]},
		{clausePrefix, needsOutputs(&s), func(t *testing.T, s *Stage[T, U], c string) { checkRelease(t, s, c, false) }},
		{clauseHeld, needsOutputs(&s), func(t *testing.T, s *Stage[T, U], c string) { checkRelease(t, s, c, true) }},
		{clauseInvalid, needsInvalid(p), checkInvalid[T, U]},
		{clauseRevoke, "", checkRevoke[T, U]},
		{clauseLoss, "", checkLoss[T, U]},
		{clauseGoroutines, "", checkGoroutines[T, U]},
	} {
		t.Run(c.clause, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			synctest.Test(t, func(t *testing.T) { c.fn(t, &s, c.clause) })
		})
	}
}

func needsOutputs[T, U any](s *Stage[T, U]) string {
	if s.End != nil {
		return "the stage ends the graph: the suite holds no output value"
	}
	return ""
}

func needsInvalid(p plan) string {
	if len(p.invalidOffsets()) == 0 {
		return "no input is invalid (Stage.Invalid)"
	}
	return ""
}

// checkOutputs: with every output completed as it arrives, every record
// commits, and each input is carried by exactly the output values Fanout
// says.
func checkOutputs[T, U any](t *testing.T, s *Stage[T, U], clause string) {
	e := start(t, s, clause, false)
	defer e.finish()
	if !e.waitCommitted(int64(e.n), "every output value completed") {
		return
	}
	for _, p := range e.rec.originProblems() {
		e.errorf("%s", p)
	}
	got := e.rec.carried(false)
	for i, want := range e.plan.outputs {
		if got[i] != want {
			e.errorf("input %d is carried by %d output values, want %d", i, got[i], want)
		}
	}
}

// checkRelease holds every output value, checks that only the records
// with no output commit, then completes the output values one by one (in
// arrival order, or reversed) and checks after each that the committed
// offset is exactly the first record with an output not completed.
func checkRelease[T, U any](t *testing.T, s *Stage[T, U], clause string, reverse bool) {
	e := start(t, s, clause, true)
	defer e.finish()
	total := e.plan.total()
	if !e.waitFor("every output value arrived", func() bool { return e.rec.coverage() >= total }) {
		e.errorf("output values carried inputs %v times, want %v", e.rec.carried(false), e.plan.outputs)
		return
	}
	if !e.waitCommitted(e.plan.committable(e.rec.carried(true)), "no output value completed: the records before the first with an output") {
		return
	}
	order := make([]int, e.rec.count())
	for k := range order {
		order[k] = k
	}
	if reverse {
		slices.Reverse(order)
	}
	for _, k := range order {
		e.rec.release(k)
		synctest.Wait()
		want := e.plan.committable(e.rec.carried(true))
		if got := e.committed(); got != want {
			e.errorf("after completing output value %d (inputs %v; order %v), committed %d, want exactly %d",
				k, e.rec.originOf(k), order, got, want)
			return
		}
	}
	if got := e.committed(); got != int64(e.n) {
		e.errorf("every output value completed: committed %d, want %d", got, e.n)
	}
}

// checkInvalid: every invalid input's record is dead-lettered once, in
// offset order, and every record commits.
func checkInvalid[T, U any](t *testing.T, s *Stage[T, U], clause string) {
	e := start(t, s, clause, false)
	defer e.finish()
	if !e.waitCommitted(int64(e.n), "every value completed or dead-lettered") {
		return
	}
	want := e.plan.invalidOffsets()
	if got := e.dl.Offsets(topic, 0); !slices.Equal(got, want) {
		e.errorf("dead-lettered offsets %v, want %v (each invalid input's record once)", got, want)
	}
}

// checkRevoke: a revoke while the stage holds what it was fed (no time
// passed, so no timer fired) drains it all within the drain timeout: every
// record commits, the graph's goroutines exit and Run goes on.
func checkRevoke[T, U any](t *testing.T, s *Stage[T, U], clause string) {
	e := start(t, s, clause, false)
	defer e.finish()
	synctest.Wait()
	if got := e.fed.Load(); got != int64(e.n) {
		e.errorf("%d of %d input values made before the revoke; the stage blocks its input", got, e.n)
	}
	t0 := time.Now()
	e.h.Revoke(topic, 0)
	if took := time.Since(t0); took >= drainTimeout {
		e.errorf("the revoke took %v: the drain timed out (%v) instead of completing what the stage was fed", took, drainTimeout)
	}
	if got := e.committed(); got != int64(e.n) {
		e.errorf("after the revoke committed %d, want %d: a drain completes every value the stage was fed", got, e.n)
	}
	e.graphLeft("revoke")
}

// checkLoss: a loss while output values are held cancels the stage at
// once: nothing more commits, the graph's goroutines exit and Run goes on
// (a stage still running after the exit grace would make Run stop with
// sluice.ErrAbandoned).
func checkLoss[T, U any](t *testing.T, s *Stage[T, U], clause string) {
	e := start(t, s, clause, true)
	defer e.finish()
	synctest.Wait()
	before := e.committed()
	t0 := time.Now()
	e.h.Lose(topic, 0)
	if took := time.Since(t0); took >= minExitGrace {
		e.errorf("the loss took %v: the stage did not return when its context was cancelled", took)
	}
	synctest.Wait()
	if got := e.committed(); got != before {
		e.errorf("after the loss committed %d, was %d: nothing more of a lost partition commits", got, before)
	}
	e.graphLeft("loss")
}

// checkGoroutines loses the partition while the stage holds what it was
// fed, assigns it again (the records come again from the committed
// offset), waits until every record committed, revokes it and stops Run:
// no goroutine started by the check may be left.
func checkGoroutines[T, U any](t *testing.T, s *Stage[T, U], clause string) {
	e := start(t, s, clause, false)
	defer e.finish()
	synctest.Wait()
	e.h.Lose(topic, 0)
	e.h.Assign(topic, 0)
	if !e.waitCommitted(int64(e.n), "every record, delivered again after the loss, completed") {
		return
	}
	e.h.Revoke(topic, 0)
	e.graphLeft("revoke")
}
