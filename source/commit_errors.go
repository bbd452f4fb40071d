package source

import (
	"errors"
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/sluice-go/sluice/pipeline"
)

// CommitError is the error the Kafka source reports to Group.Committed
// (and so to the commit hooks given to pipeline.Run) for a commit that failed,
// was not answered in time or could not be sent. It tells which commit it
// was; Unwrap returns the cause, a kafka.Error when the broker or
// librdkafka rejected the commit. The source reports it on its poll
// goroutine, once per commit.
type CommitError struct {
	// Reason is what the commit was for: "interval" (the background commit
	// every Config.CommitInterval), "revoke" (partitions handed back in a
	// rebalance) or "shutdown" (the final commit).
	Reason string
	// Offsets are the offsets the commit was sent (or meant to be sent)
	// for.
	Offsets []pipeline.Offset
	// Err is the cause.
	Err error
}

// Error names the commit, its offsets and the cause.
func (e *CommitError) Error() string {
	return fmt.Sprintf("source: %s commit of %s: %v", e.Reason, rebalance.OffsetsString(e.Offsets), e.Err)
}

// Unwrap returns the cause.
func (e *CommitError) Unwrap() error { return e.Err }

// expectedCommitError reports whether err is a commit rejection expected
// around rebalances: the group moved on (another member owns the
// partition now) or is rebalancing.
func expectedCommitError(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr.Code() {
	case kafka.ErrRebalanceInProgress, kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID,
		kafka.ErrStaleMemberEpoch, kafka.ErrFencedMemberEpoch, kafka.ErrAssignmentLost, kafka.ErrFencedInstanceID:
		return true
	}
	return false
}

// ExpectedCommitError is expectedCommitError, for the core.
func (r *runner) ExpectedCommitError(err error) bool { return expectedCommitError(err) }

// RetriableCommitError reports whether a commit rejected with err may
// succeed once the rebalance in progress completes.
func (r *runner) RetriableCommitError(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && kerr.Code() == kafka.ErrRebalanceInProgress
}
