package exactlyonce

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/pipeline"
)

// A shutdown commit the group refuses because the membership moved on
// (ErrGroupMoved: a cooperative rebalance started by the other members
// stopping at the same time) aborts the transaction, and Run returns no
// error: nothing of it is visible, nothing was committed, and the next
// owner starts from the last committed transaction.
func TestShutdownCommitRefusedByTheGroupAbortsWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txn := &stubTxn{failNext: fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved)}
		d := newDriver(txn, Config{})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
		})
		synctest.Wait() // fed and processed: the shutdown commits
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v, want nil (the group moved on: the next owner starts from the last commit)", err)
		}
		if visible, commits, aborts, _ := txn.state(); len(visible) != 0 || len(commits) != 0 || aborts != 1 || len(txn.rewound()) != 0 {
			t.Fatalf("visible %v commits %v aborts %d rewinds %v; want one abort, nothing else", visible, commits, aborts, txn.rewound())
		}
	})
}

// The same refusal with a failing abort stops the Group: the
// transaction's outcome is unknown.
func TestShutdownCommitRefusedByTheGroupFailedAbortStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		moved, failed := fmt.Errorf("%w: ILLEGAL_GENERATION", ErrGroupMoved), errors.New("abort failed")
		txn := &stubTxn{failNext: moved, failAbort: failed}
		d := newDriver(txn, Config{})
		_, stop := run(t, d, fanOut(txn, newGates()))
		d.do(func(g *Group) {
			_ = g.Assign([]pipeline.TopicPartition{tp(0)})
			g.Deliver(tp(0), recs(0, 0, 2))
		})
		synctest.Wait()
		if err := stop(); !errors.Is(err, ErrAborted) || !errors.Is(err, moved) || !errors.Is(err, failed) {
			t.Fatalf("Run returned %v, want ErrAborted wrapping %v and %v", err, moved, failed)
		}
	})
}
