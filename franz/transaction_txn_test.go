package franz

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// Offsets refused because the membership moved on are marked
// ErrGroupMoved (the exactly-once shutdown then aborts without failing
// Run), keeping the cause; other refusals, and those of a producer that
// also failed fatally, are not.
func TestTxnRefusedByAMovedGroupIsErrGroupMoved(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.IllegalGeneration, true},
		{kerr.UnknownMemberID, true},
		{kerr.StaleMemberEpoch, true},
		{kerr.FencedInstanceID, true},
		{kerr.RebalanceInProgress, true},
		{errors.Join(kerr.IllegalGeneration, kerr.ProducerFenced), false}, // fatal wins
		{kerr.CoordinatorNotAvailable, false},
		{kerr.ProducerFenced, false},
		{errors.New("other"), false},
	} {
		cause := fmt.Errorf("the transaction's offset commit was refused: p/0: %w", tc.err)
		err := fatalTxn(groupMovedTxn(cause))
		if got := errors.Is(err, exactlyonce.ErrGroupMoved); got != tc.want {
			t.Errorf("%v: ErrGroupMoved %v, want %v", tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: the cause is not wrapped: %v", tc.err, err)
		}
	}
	if err := groupMovedTxn(nil); err != nil {
		t.Errorf("groupMovedTxn(nil) = %v, want nil", err)
	}
}
