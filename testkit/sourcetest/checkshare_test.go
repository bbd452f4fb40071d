package sourcetest_test

import (
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// stubAckGroup is a stubGroup in share mode whose outcomes the test sets.
type stubAckGroup struct {
	stubGroup
	acks []sluice.Ack // what the next Acks returns
}

func (s *stubAckGroup) TrackAcks() error { return nil }
func (s *stubAckGroup) Acks(dst []sluice.Ack) []sluice.Ack {
	dst = append(dst, s.acks...)
	s.acks = nil
	return dst
}
func (s *stubAckGroup) DeadLetterRecord(sluice.TopicPartition, sluice.Record, error) bool {
	return true
}

func ack(off int64, o sluice.AckOutcome) sluice.Ack {
	return sluice.Ack{TopicPartition: tp0, Offset: off, Outcome: o}
}

func TestCheckingAckGroupAcceptsAWellBehavedSource(t *testing.T) {
	g := &stubAckGroup{}
	cg := sourcetest.NewCheckingAckGroup(g)
	_ = cg.TrackAcks()
	cg.Joined()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(5, 2, 3)) // any order
	cg.DeadLetterRecord(tp0, recs(4)[0], errors.New("too often"))
	g.acks = []sluice.Ack{ack(2, sluice.AckReleased), ack(5, sluice.AckAccepted), ack(4, sluice.AckAccepted)}
	cg.Acks(nil)
	cg.Deliver(tp0, recs(2)) // released: it comes back
	cg.Polled()
	cg.Offsets()              // reading them is allowed; committing is not
	cg.Committed(nil, 0, nil) // a report of nothing
	g.acks = []sluice.Ack{ack(2, sluice.AckRejected)}
	cg.Shutdown()
	cg.Acks(nil)
	cg.Returned(true)
	expect(t, cg)
	if got, n := cg.Outcomes(tp0, 2); n != 2 || len(got) != 2 || got[0] != sluice.AckReleased || got[1] != sluice.AckRejected {
		t.Errorf("outcomes of offset 2: %v after %d deliveries, want released then rejected after 2", got, n)
	}
	if held := cg.Held(); len(held) != 1 || held[0].Offset != 3 {
		t.Errorf("held %v, want offset 3 (no outcome)", held)
	}
	if c := cg.ShareCounts(); c != (sourcetest.ShareCounts{Delivered: 4, DeadLettered: 1, Accepted: 2, Rejected: 1, Released: 1}) {
		t.Errorf("share counts %+v", c)
	}
}

func TestCheckingAckGroupTrackAcksClause(t *testing.T) {
	cg := sourcetest.NewCheckingAckGroup(&stubAckGroup{})
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	_ = cg.TrackAcks()
	_ = cg.TrackAcks()
	expect(t, cg,
		sourcetest.ClauseTrackAcks, "Group.Assign([{t 0}]) called before Group.TrackAcks",
		sourcetest.ClauseTrackAcks, "Group.TrackAcks called after partitions were assigned",
		sourcetest.ClauseTrackAcks, "Group.TrackAcks called a second time")
}

func TestCheckingAckGroupAssignClause(t *testing.T) {
	cg := sourcetest.NewCheckingAckGroup(&stubAckGroup{})
	_ = cg.TrackAcks()
	cg.Deliver(tp0, recs(0))
	cg.DeadLetterRecord(tp0, recs(1)[0], errors.New("too often"))
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, []sluice.Record{{Topic: "u", Offset: 2}})
	cg.DeadLetterRecord(tp0, sluice.Record{Topic: "u", Offset: 3}, errors.New("too often"))
	expect(t, cg,
		sourcetest.ClauseShareAssign, "Group.Deliver of 1 records of t/0, which is never assigned",
		sourcetest.ClauseShareAssign, "Group.DeadLetterRecord of t/0@1, a partition not assigned",
		sourcetest.ClauseShareAssign, "record u/0@2 delivered as a record of t/0",
		sourcetest.ClauseShareAssign, "record u/0@3 dead-lettered as a record of t/0")
}

func TestCheckingAckGroupAcknowledgeClause(t *testing.T) {
	g := &stubAckGroup{}
	cg := sourcetest.NewCheckingAckGroup(g)
	_ = cg.TrackAcks()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(0, 1))
	g.acks = []sluice.Ack{ack(0, sluice.AckAccepted)}
	cg.Acks(nil)
	cg.Deliver(tp0, recs(0)) // accepted, yet the broker delivers it again
	cg.Shutdown()
	g.acks = []sluice.Ack{ack(1, sluice.AckAccepted)} // never taken
	cg.Returned(true)
	expect(t, cg,
		sourcetest.ClauseAcknowledge, "t/0@0 delivered again after the source took its outcome accepted",
		sourcetest.ClauseAcknowledge, "1 outcomes reported by the group were never taken with Acks before Source.Run returned (t/0@1 accepted among them)")
	if c := cg.ShareCounts(); c.Untaken != 1 {
		t.Errorf("untaken %d, want 1", c.Untaken)
	}

	cg = sourcetest.NewCheckingAckGroup(&stubAckGroup{acks: []sluice.Ack{ack(1, sluice.AckAccepted)}})
	cg.Returned(false) // a fatal client failure: the records are lost, nothing to acknowledge
	expect(t, cg)
}

func TestCheckingAckGroupNoCommitClause(t *testing.T) {
	g := &stubAckGroup{stubGroup: stubGroup{offsets: off(2), final: off(3)}}
	cg := sourcetest.NewCheckingAckGroup(g)
	_ = cg.TrackAcks()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Committed(cg.Offsets(), 0, nil)
	cg.Revoke([]sluice.TopicPartition{tp0}) // nothing to commit: no §5 window
	cg.Polled()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Shutdown()
	cg.Returned(true)
	expect(t, cg, sourcetest.ClauseNoCommit, "committed [{{t 0} 2}] (reported with Group.Committed)")
}

// A share source keeps §3 and §6 of the Source contract.
func TestCheckingAckGroupPauseAndShutdownClauses(t *testing.T) {
	g := &stubAckGroup{stubGroup: stubGroup{pause: true}}
	cg := sourcetest.NewCheckingAckGroup(g)
	_ = cg.TrackAcks()
	_ = cg.Assign([]sluice.TopicPartition{tp0})
	cg.Deliver(tp0, recs(3))
	cg.Deliver(tp0, recs(1)) // same poll: allowed
	cg.Polled()
	cg.Deliver(tp0, recs(2))
	cg.Shutdown()
	cg.DeadLetterRecord(tp0, recs(4)[0], errors.New("too often"))
	expect(t, cg,
		sourcetest.ClausePause, "t/0: 1 records from offset 2 delivered after Deliver asked for a pause",
		sourcetest.ClauseShutdown, "Group.DeadLetterRecord of t/0@4 called after Group.Shutdown")
}

// The share clauses quote sluice.AckGroup's documentation word for word.
func TestShareClausesQuoteAckGroupDoc(t *testing.T) {
	checkQuotes(t, "../../ack.go", "sluice.AckGroup", sourcetest.ClauseTrackAcks, sourcetest.ClauseMaxDeliveries)
}
