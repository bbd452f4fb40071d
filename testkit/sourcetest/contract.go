package sourcetest

import "fmt"

// The clauses of the contract of sluice.Source (and of the sluice.Group
// handed to it), numbered as a [Violation] cites them. Each quotes the
// sentence of sluice.Source's documentation it checks:
//
//	§1 The source calls the Group's methods only from the goroutine
//	   running Source.Run (its poll loop), never concurrently.
//	§2 Assign before Deliver for a partition; Deliver records of one
//	   partition in offset order.
//	§3 When Deliver returns pause=true, stop delivering that partition
//	   (pause it) until it is listed by Group.Resumable.
//	§4 Commit what Group.Offsets returns, on the source's own interval.
//	§5 Before giving a partition up gracefully, call Group.Revoke and
//	   commit what it returns synchronously; when the partition was lost,
//	   call Group.Lose and commit nothing for it. Never commit a partition
//	   that was revoked or lost.
//	§6 When ctx is done, call Group.Shutdown, commit what it returns, close
//	   the client and return nil, or an error naming what failed in that
//	   shutdown (the final commit, closing the client): Run returns it,
//	   joined after its own error if there is one.
//
// The clauses of the contract of a share group source (sluice.AckGroup)
// are numbered on from them. A share source keeps §1, §3 and §6 of the
// Source contract too (its calls, pauses and shutdown); these replace §2,
// §4 and §5 (offset order and commits). Each quotes the sentence of
// sluice.AckGroup's documentation it checks:
//
//	§7  Call TrackAcks once, before the first Assign.
//	§8  Assign a partition when its first record arrives; Deliver records
//	    in any offset order (redeliveries come back with old offsets).
//	§9  Acknowledge every outcome Acks returns (Wake is signalled when
//	    there are new ones)
//	§10 commit nothing from Offsets, whose values mean nothing in share
//	    mode.
//	§11 A record without an outcome when its partition was revoked, lost
//	    or shut down is unfinished: release it for redelivery.
//	§12 Records whose broker delivery count passed the source's limit go
//	    to DeadLetterRecord instead of Deliver.
const (
	ClauseCalls    = 1
	ClauseDeliver  = 2
	ClausePause    = 3
	ClauseCommit   = 4
	ClauseGiveUp   = 5
	ClauseShutdown = 6

	ClauseTrackAcks     = 7
	ClauseShareAssign   = 8
	ClauseAcknowledge   = 9
	ClauseNoCommit      = 10
	ClauseRelease       = 11
	ClauseMaxDeliveries = 12
)

// A rule is what a clause quotes, and from the documentation of which
// contract: "Source" (sluice.Source's) or "AckGroup" (sluice.AckGroup's).
type rule struct{ contract, text string }

// rules quotes the documentation, by clause number; a test checks the
// quotes are still there.
var rules = map[int]rule{
	ClauseCalls:    {"Source", "The source calls the Group's methods only from the goroutine running Source.Run (its poll loop), never concurrently."},
	ClauseDeliver:  {"Source", "Assign before Deliver for a partition; Deliver records of one partition in offset order."},
	ClausePause:    {"Source", "When Deliver returns pause=true, stop delivering that partition (pause it) until it is listed by Group.Resumable."},
	ClauseCommit:   {"Source", "Commit what Group.Offsets returns, on the source's own interval."},
	ClauseGiveUp:   {"Source", "Before giving a partition up gracefully, call Group.Revoke and commit what it returns synchronously; when the partition was lost, call Group.Lose and commit nothing for it. Never commit a partition that was revoked or lost."},
	ClauseShutdown: {"Source", "When ctx is done, call Group.Shutdown, commit what it returns, close the client and return nil, or an error naming what failed in that shutdown (the final commit, closing the client): Run returns it, joined after its own error if there is one."},

	ClauseTrackAcks:     {"AckGroup", "Call TrackAcks once, before the first Assign."},
	ClauseShareAssign:   {"AckGroup", "Assign a partition when its first record arrives; Deliver records in any offset order (redeliveries come back with old offsets)."},
	ClauseAcknowledge:   {"AckGroup", "Acknowledge every outcome Acks returns (Wake is signalled when there are new ones)"},
	ClauseNoCommit:      {"AckGroup", "commit nothing from Offsets, whose values mean nothing in share mode."},
	ClauseRelease:       {"AckGroup", "A record without an outcome when its partition was revoked, lost or shut down is unfinished: release it for redelivery."},
	ClauseMaxDeliveries: {"AckGroup", "Records whose broker delivery count passed the source's limit go to DeadLetterRecord instead of Deliver."},
}

// Violation is one breach of the Source contract seen by a [CheckingGroup]
// (or of the share contract, seen by a [CheckingAckGroup]): the clause
// broken (one of the Clause constants) and what the source did.
type Violation struct {
	Clause int
	Detail string
}

// Rule returns the sentence of sluice.Source's documentation (of
// sluice.AckGroup's for the share clauses, §7 on) that the clause quotes.
func (v Violation) Rule() string { return rules[v.Clause].text }

// Error formats the violation as
// "Source contract §N (<the rule quoted>): <what the source did>", or
// "AckGroup contract §N ..." for a share clause.
func (v Violation) Error() string { return cite(v.Clause) + ": " + v.Detail }

// cite names clause as "Source contract §N (<the rule quoted>)", or
// "AckGroup contract §N (...)" for a share clause.
func cite(clause int) string {
	r := rules[clause]
	return fmt.Sprintf("%s contract §%d (%s)", r.contract, clause, r.text)
}
