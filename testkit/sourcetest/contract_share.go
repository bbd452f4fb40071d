package sourcetest

// The clauses of the contract of a share group source (sluice.AckGroup),
// numbered after those of sluice.Source, as a [Violation] cites them. A
// share source keeps §1, §3 and §6 of the Source contract too (its calls,
// pauses and shutdown); these replace §2, §4 and §5 (offset order and
// commits). Each quotes the sentence of sluice.AckGroup's documentation
// it checks:
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
	ClauseTrackAcks     = 7
	ClauseShareAssign   = 8
	ClauseAcknowledge   = 9
	ClauseNoCommit      = 10
	ClauseRelease       = 11
	ClauseMaxDeliveries = 12
)

// shareClauses quotes sluice.AckGroup's documentation, by clause number; a
// test checks the quotes are still there.
var shareClauses = map[int]string{
	ClauseTrackAcks:     "Call TrackAcks once, before the first Assign.",
	ClauseShareAssign:   "Assign a partition when its first record arrives; Deliver records in any offset order (redeliveries come back with old offsets).",
	ClauseAcknowledge:   "Acknowledge every outcome Acks returns (Wake is signalled when there are new ones)",
	ClauseNoCommit:      "commit nothing from Offsets, whose values mean nothing in share mode.",
	ClauseRelease:       "A record without an outcome when its partition was revoked, lost or shut down is unfinished: release it for redelivery.",
	ClauseMaxDeliveries: "Records whose broker delivery count passed the source's limit go to DeadLetterRecord instead of Deliver.",
}
