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

// RetriableCommitError reports whether a commit rejected with err may
// succeed once the rebalance in progress completes.
func (r *runner) RetriableCommitError(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && kerr.Code() == kafka.ErrRebalanceInProgress
}
