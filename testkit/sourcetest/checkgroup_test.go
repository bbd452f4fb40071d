package sourcetest_test

import (
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// stubGroup is a sluice.Group whose answers the test sets.
type stubGroup struct {
	pause     bool
	resumable []sluice.TopicPartition
	offsets   []sluice.Offset
	final     []sluice.Offset // what Revoke and Shutdown return
	entered   chan struct{}   // if set, Deliver signals it and waits for release
	release   chan struct{}
	wake      chan struct{}
}

func (s *stubGroup) Assign([]sluice.TopicPartition) error            { return nil }
func (s *stubGroup) Revoke([]sluice.TopicPartition) []sluice.Offset  { return s.final }
func (s *stubGroup) Lose([]sluice.TopicPartition)                    {}
func (s *stubGroup) Shutdown() []sluice.Offset                       { return s.final }
func (s *stubGroup) Unfinished() []sluice.TopicPartition             { return nil }
func (s *stubGroup) DrainTimeout() time.Duration                     { return time.Second }
func (s *stubGroup) MaxInFlight() int                                { return pipeline.DefaultMaxInFlight }
func (s *stubGroup) MaxInFlightBytes() int64                         { return pipeline.DefaultMaxInFlightBytes }
func (s *stubGroup) Resumable() []sluice.TopicPartition              { return s.resumable }
func (s *stubGroup) Wake() <-chan struct{}                           { return s.wake }
func (s *stubGroup) Offsets() []sluice.Offset                        { return s.offsets }
func (s *stubGroup) Polled()                                         {}
func (s *stubGroup) Joined()                                         {}
func (s *stubGroup) Committed([]sluice.Offset, time.Duration, error) {}
func (s *stubGroup) HighWatermark(sluice.TopicPartition, int64)      {}
func (s *stubGroup) Deliver(sluice.TopicPartition, []sluice.Record) bool {
	if s.entered != nil {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.pause
}

var tp0 = sluice.TopicPartition{Topic: "t", Partition: 0}

func recs(offs ...int64) []sluice.Record {
	out := make([]sluice.Record, len(offs))
	for i, o := range offs {
		out[i] = sluice.Record{Topic: "t", Offset: o}
	}
	return out
}

func off(next int64) []sluice.Offset {
	return []sluice.Offset{{TopicPartition: tp0, Next: next}}
}

// expect checks that cg saw exactly the violations of the given clauses,
// in order, each detail containing its fragment, each citing the contract
// its clause belongs to.
func expect(t *testing.T, cg interface{ Violations() []sourcetest.Violation }, want ...any) {
	t.Helper()
	got := cg.Violations()
	if len(got) != len(want)/2 {
		t.Fatalf("violations %q, want %d: %v", got, len(want)/2, want)
	}
	for i, v := range got {
		clause, frag := want[2*i].(int), want[2*i+1].(string)
		prefix := "Source contract §"
		if clause >= sourcetest.ClauseTrackAcks {
			prefix = "AckGroup contract §"
		}
		if v.Clause != clause || !strings.Contains(v.Detail, frag) ||
			!strings.HasPrefix(v.Error(), prefix) || !strings.Contains(v.Error(), v.Rule()) {
			t.Errorf("violation %d = %q, want clause §%d with %q", i, v.Error(), clause, frag)
		}
	}
}

func TestCheckingGroupAcceptsAWellBehavedSource(t *testing.T) {
	g := &stubGroup{offsets: off(2), final: off(3)}
	cg := sourcetest.NewCheckingGroup(g)
	cg.Joined()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	g.pause = true
	cg.Deliver(tp0, recs(0, 1))
	cg.Deliver(tp0, recs(2)) // same poll: allowed after the pause
	cg.Polled()
	g.resumable = []sluice.TopicPartition{tp0}
	cg.Resumable()
	g.pause = false
	cg.Deliver(tp0, recs(3))
	cg.Committed(cg.Offsets(), 0, nil)
	cg.Committed(cg.Revoke([]sluice.TopicPartition{tp0}), 0, nil)
	cg.Polled()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(3)) // a new assignment starts over
	cg.Committed(cg.Shutdown(), 0, nil)
	cg.Returned(true)
	expect(t, cg)
	if c := cg.Counts(); c.Assigned != 2 || c.Revoked != 1 || c.Pauses != 2 || c.Resumes != 1 || c.Delivered != 5 || c.Commits != 3 {
		t.Errorf("counts %+v", c)
	}
}

func TestCheckingGroupDeliverClause(t *testing.T) {
	cg := sourcetest.NewCheckingGroup(&stubGroup{})
	cg.Deliver(tp0, recs(0))
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(4, 5))
	cg.Deliver(tp0, recs(5))
	cg.Deliver(tp0, []sluice.Record{{Topic: "u", Offset: 6}})
	cg.Lose([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(7))
	expect(t, cg,
		sourcetest.ClauseDeliver, "t/0, which is never assigned",
		sourcetest.ClauseDeliver, "offset 5 delivered after offset 5",
		sourcetest.ClauseDeliver, "record u/0@6 delivered as a record of t/0",
		sourcetest.ClauseDeliver, "which is lost")
}

func TestCheckingGroupPauseClause(t *testing.T) {
	g := &stubGroup{pause: true}
	cg := sourcetest.NewCheckingGroup(g)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(0))
	cg.Polled()
	cg.Deliver(tp0, recs(1, 2))
	expect(t, cg, sourcetest.ClausePause, "t/0: 2 records from offset 1 delivered after Deliver asked for a pause and a later poll")
}

func TestCheckingGroupCommitClause(t *testing.T) {
	g := &stubGroup{offsets: off(5)}
	cg := sourcetest.NewCheckingGroup(g)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Committed(off(4), 0, nil)
	cg.Offsets()
	g.offsets = off(3)
	cg.Offsets()
	cg.Committed(off(5), 0, nil)
	cg.Committed(off(3), 0, nil)
	expect(t, cg,
		sourcetest.ClauseCommit, "committed 4, a value the group never returned",
		sourcetest.ClauseCommit, "committed 3 after 5; commits moved back")
}

func TestCheckingGroupGiveUpClause(t *testing.T) {
	g := &stubGroup{offsets: off(2), final: off(3)}
	cg := sourcetest.NewCheckingGroup(g)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Offsets()
	cg.Revoke([]sluice.TopicPartition{tp0})
	cg.Polled() // went on without committing 3
	cg.Committed(off(3), 0, nil)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Lose([]sluice.TopicPartition{tp0})
	cg.Committed(off(3), 0, nil) // in the loss handling: an earlier commit answered
	cg.Polled()
	cg.Committed(off(3), 0, nil)
	expect(t, cg,
		sourcetest.ClauseGiveUp, "t/0: the final offset 3 that Group.Revoke returned was not reported committed",
		sourcetest.ClauseGiveUp, "committed 3 after the partition was revoked",
		sourcetest.ClauseGiveUp, "committed 3 after Group.Lose")
}

func TestCheckingGroupShutdownClause(t *testing.T) {
	g := &stubGroup{final: off(3)}
	cg := sourcetest.NewCheckingGroup(g)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Shutdown()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Returned(true)
	expect(t, cg,
		sourcetest.ClauseShutdown, "Group.Assign([{t 0}]) called after Group.Shutdown",
		sourcetest.ClauseShutdown, "final offset 3 that Group.Shutdown returned was not reported committed (Group.Committed) before Source.Run returned")

	cg = sourcetest.NewCheckingGroup(g)
	cg.Returned(true)
	cg.Polled()
	expect(t, cg,
		sourcetest.ClauseShutdown, "without calling Group.Shutdown",
		sourcetest.ClauseCalls, "Group.Polled called after Source.Run returned")

	cg = sourcetest.NewCheckingGroup(g)
	cg.Returned(false) // a fatal client failure: no shutdown expected
	expect(t, cg)
}

func TestCheckingGroupCallsClause(t *testing.T) {
	g := &stubGroup{entered: make(chan struct{}), release: make(chan struct{})}
	cg := sourcetest.NewCheckingGroup(g)
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	var wg sync.WaitGroup
	wg.Go(func() { cg.Deliver(tp0, recs(0)) })
	<-g.entered
	cg.Offsets() // while Deliver runs on another goroutine
	close(g.release)
	wg.Wait()
	expect(t, cg, sourcetest.ClauseCalls, "Group.Offsets called while another Group call was running")
}

// The clauses quote sluice.Source's documentation word for word.
func TestClausesQuoteSourceDoc(t *testing.T) {
	checkQuotes(t, "../../source.go", "sluice.Source", sourcetest.ClauseCalls, sourcetest.ClauseShutdown)
}

// checkQuotes checks that the rules of clauses from to to are sentences of
// the doc comments of file (what names them in failures).
func checkQuotes(t *testing.T, file, what string, from, to int) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Skipf("package sluice's source is not here: %v", err)
	}
	var doc strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
			doc.WriteString(strings.TrimPrefix(strings.TrimSpace(rest), "- ") + " ")
		}
	}
	text := regexp.MustCompile(`\s+`).ReplaceAllString(doc.String(), " ")
	for clause := from; clause <= to; clause++ {
		rule := sourcetest.Violation{Clause: clause}.Rule()
		if rule == "" || !strings.Contains(text, rule) {
			t.Errorf("clause §%d quotes %q, which %s's documentation does not say", clause, rule, what)
		}
	}
}

// saturatedGroup is a stubGroup that tells whether the runtime's budget
// is full.
type saturatedGroup struct {
	stubGroup
	full bool
}

func (s *saturatedGroup) Saturated() bool { return s.full }

// A checked source sees the runtime's saturation as an unchecked one does:
// the CheckingGroup passes the wrapped Group's answer on, and answers
// false for a Group that does not tell.
func TestCheckingGroupPassesSaturatedOn(t *testing.T) {
	for _, full := range []bool{false, true} {
		if got := sourcetest.NewCheckingGroup(&saturatedGroup{full: full}).Saturated(); got != full {
			t.Errorf("Saturated = %v over a group saying %v", got, full)
		}
	}
	if sourcetest.NewCheckingGroup(&stubGroup{}).Saturated() {
		t.Error("Saturated = true over a group that does not tell")
	}
}
