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
const (
	ClauseCalls    = 1
	ClauseDeliver  = 2
	ClausePause    = 3
	ClauseCommit   = 4
	ClauseGiveUp   = 5
	ClauseShutdown = 6
)

// clauses quotes sluice.Source's documentation, by clause number; a test
// checks the quotes are still there.
var clauses = map[int]string{
	ClauseCalls:    "The source calls the Group's methods only from the goroutine running Source.Run (its poll loop), never concurrently.",
	ClauseDeliver:  "Assign before Deliver for a partition; Deliver records of one partition in offset order.",
	ClausePause:    "When Deliver returns pause=true, stop delivering that partition (pause it) until it is listed by Group.Resumable.",
	ClauseCommit:   "Commit what Group.Offsets returns, on the source's own interval.",
	ClauseGiveUp:   "Before giving a partition up gracefully, call Group.Revoke and commit what it returns synchronously; when the partition was lost, call Group.Lose and commit nothing for it. Never commit a partition that was revoked or lost.",
	ClauseShutdown: "When ctx is done, call Group.Shutdown, commit what it returns, close the client and return nil, or an error naming what failed in that shutdown (the final commit, closing the client): Run returns it, joined after its own error if there is one.",
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
func (v Violation) Rule() string {
	if r, ok := shareClauses[v.Clause]; ok {
		return r
	}
	return clauses[v.Clause]
}

// Error formats the violation as
// "Source contract §N (<the rule quoted>): <what the source did>", or
// "AckGroup contract §N ..." for a share clause.
func (v Violation) Error() string { return cite(v.Clause) + ": " + v.Detail }

// cite names clause as "Source contract §N (<the rule quoted>)", or
// "AckGroup contract §N (...)" for a share clause.
func cite(clause int) string {
	contract := "Source"
	if _, ok := shareClauses[clause]; ok {
		contract = "AckGroup"
	}
	return fmt.Sprintf("%s contract §%d (%s)", contract, clause, Violation{Clause: clause}.Rule())
}
