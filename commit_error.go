package sluice

import (
	"fmt"
	"slices"
	"strings"
)

// CommitError is the error the Kafka sources (source.NewSource,
// franz.NewSource) pass to [Group.Committed], and so to every
// [HookCommitted], for a commit that failed, was not answered in time or
// could not be sent. A source reports it on its poll goroutine, once per
// commit; a commit that succeeded is reported with a nil error.
type CommitError struct {
	// Reason is what the commit was for: "interval" (the background
	// commit every commit interval), "revoke" (partitions handed back in
	// a rebalance) or "shutdown" (the final commit).
	Reason string
	// Offsets are the offsets the commit was sent (or meant to be sent)
	// for.
	Offsets []Offset
	// Err is the cause: the client's error (a kafka.Error of
	// confluent-kafka-go, a kerr.Error of franz-go when the broker
	// rejected the commit), or the source's own when the commit was not
	// answered in time or not sent.
	Err error
}

// Error names the commit, its offsets (sorted) and the cause:
// "interval commit of [topic/partition@next ...]: cause".
func (e *CommitError) Error() string {
	return fmt.Sprintf("%s commit of %s: %v", e.Reason, offsetsString(e.Offsets), e.Err)
}

// Unwrap returns Err.
func (e *CommitError) Unwrap() error { return e.Err }

// offsetsString renders offsets as [topic/partition@next ...], sorted.
func offsetsString(offs []Offset) string {
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Next)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
