package sluice

import "fmt"

// AckOutcome is what happened to one record of a share group source
// (Kafka share groups, KIP-932), as reported by [AckGroup.Acks].
type AckOutcome int8

// The outcomes [AckGroup.Acks] reports.
const (
	// AckAccepted: the record is done. Its ticket completed (it reached an
	// End or was filtered out), or it was invalid and the dead-letter
	// destination stored it.
	AckAccepted AckOutcome = iota + 1
	// AckRejected: the record is invalid and Run has no dead-letter
	// destination; it must never be delivered again.
	AckRejected
	// AckReleased: a stage's retries were exhausted on the record; it is
	// to be delivered again, to any member.
	AckReleased
)

// String returns the outcome's name as logged: accepted, rejected or
// released.
func (o AckOutcome) String() string {
	switch o {
	case AckAccepted:
		return "accepted"
	case AckRejected:
		return "rejected"
	case AckReleased:
		return "released"
	}
	return fmt.Sprintf("AckOutcome(%d)", int8(o))
}

// Ack is the outcome of one record delivered to a Run in share mode.
type Ack struct {
	TopicPartition
	Offset  int64
	Outcome AckOutcome
}

// MaxDeliveriesStage is the Stage of the dead letters handed over with
// [AckGroup.DeadLetterRecord]: records delivered too many times, never run
// through the graph.
const MaxDeliveriesStage = "MaxDeliveries"

// AckGroup is the [Group] of a source that acknowledges records one by one
// (a share group) instead of committing offsets. The Group that pipeline.Run
// hands to Source.Run implements it; a source asserts it
// (g.(sluice.AckGroup)). Like Group's, its methods are called from the
// source's poll goroutine only.
//
// Contract for share sources, on top of Group's (where they differ, this
// wins):
//   - Call TrackAcks once, before the first Assign. Assign a partition
//     when its first record arrives; Deliver records in any offset order
//     (redeliveries come back with old offsets).
//   - Acknowledge every outcome Acks returns (Wake is signalled when
//     there are new ones); commit nothing from Offsets, whose values mean
//     nothing in share mode.
//   - A record without an outcome when its partition was revoked, lost or
//     shut down is unfinished: release it for redelivery.
//   - Records whose broker delivery count passed the source's limit go to
//     DeadLetterRecord instead of Deliver.
//
// In share mode a stage whose retries are exhausted releases the record
// (AckReleased, logged as a warning) and Run goes on; an invalid record
// without a dead-letter destination is rejected (AckRejected) and Run goes
// on. Every other error stops Run as usual.
type AckGroup interface {
	Group
	// TrackAcks switches the Run to share mode. It fails when partitions
	// are assigned already.
	TrackAcks() error
	// Acks appends to dst the outcomes reported since the previous call,
	// in no particular order, and returns it.
	Acks(dst []Ack) []Ack
	// DeadLetterRecord hands rec, of the assigned partition tp, to the
	// dead-letter destination with reason as its error, without running
	// the graph; its outcome is AckAccepted once stored (AckRejected at
	// once without a destination). False when tp is not assigned or is
	// being taken away.
	DeadLetterRecord(tp TopicPartition, rec Record, reason error) bool
}
