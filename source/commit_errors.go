package source

import (
	"errors"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

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

// RetriableCommitError reports whether a final commit rejected with err
// may succeed once the rebalance in progress completes: the group is
// rebalancing (REBALANCE_IN_PROGRESS), or its generation or the member's
// epoch moved (ILLEGAL_GENERATION, STALE_MEMBER_EPOCH), which a
// cooperative rebalance or a KIP-848 heartbeat does while the member
// keeps its partitions. librdkafka then either completes the rebalance
// (the retry carries the new generation, or the partitions are revoked
// first) or, when it was not rebalancing, declares the assignment lost;
// WaitToRetryCommit serves that loss, which takes the partitions out of
// the retry.
func (r *runner) RetriableCommitError(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr.Code() {
	case kafka.ErrRebalanceInProgress, kafka.ErrIllegalGeneration, kafka.ErrStaleMemberEpoch:
		return true
	}
	return false
}
