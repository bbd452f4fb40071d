package exactlyonce

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
)

// A shutdown commit the group refuses because the membership moved on
// (ErrGroupMoved: a cooperative rebalance started by the other members
// stopping at the same time) aborts the transaction, and Run returns no
// error: nothing of it is visible, nothing was committed, and the next
// owner starts from the last committed transaction.
func TestShutdownCommitRefusedByTheGroupAbortsWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{failNext: fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved)}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2)) // fed and processed: the shutdown commits
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil (the group moved on: the next owner starts from the last commit)", err)
		}
		checkOneAbort(t, txn)
		checkNoRewind(t, txn)
	})
}

// The same refusal with a failing abort stops the Group: the
// transaction's outcome is unknown.
func TestShutdownCommitRefusedByTheGroupFailedAbortStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		moved, failed := fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved), errors.New("abort failed")
		txn := &stubTxn{failNext: moved, failAbort: failed}
		d, stop := startFanOut(t, txn, newGates())
		d.fed(recs(0, 0, 2))
		if err := stop(); !errors.Is(err, ErrAborted) || !errors.Is(err, moved) || !errors.Is(err, failed) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping %v and %v", err, moved, failed)
		}
	})
}
