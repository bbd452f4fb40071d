package source

import (
	"errors"
	"fmt"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// A transaction's offsets refused because the membership moved on are
// marked ErrGroupMoved (the exactly-once shutdown then aborts without
// failing Run); other errors, and fatal ones, are not.
func TestTxnRefusedByAMovedGroupIsErrGroupMoved(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kafka.NewError(kafka.ErrIllegalGeneration, "Failed to commit offsets to transaction", false), true},
		{kafka.NewError(kafka.ErrUnknownMemberID, "x", false), true},
		{kafka.NewError(kafka.ErrRebalanceInProgress, "x", false), true},
		{kafka.NewError(kafka.ErrFencedInstanceID, "x", false), true},
		{kafka.NewError(kafka.ErrFencedMemberEpoch, "x", false), true},
		{kafka.NewError(kafka.ErrIllegalGeneration, "x", true), false}, // fatal: ErrFatal wins
		{kafka.NewError(kafka.ErrCoordinatorNotAvailable, "x", false), false},
		{errors.New("other"), false},
	} {
		err := groupMovedTxn(fatalTxn(fmt.Errorf("sending the offsets to the transaction: %w", tc.err)))
		if got := errors.Is(err, exactlyonce.ErrGroupMoved); got != tc.want {
			t.Errorf("%v: ErrGroupMoved %v, want %v", tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: the cause is not wrapped: %v", tc.err, err)
		}
	}
}
