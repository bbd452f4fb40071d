package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestExactlyOnceRewindAfterFailedCommit: the coordinator answers one of
// member A's EndTxn(commit) mid-stream with an error (UNKNOWN_SERVER_ERROR,
// which librdkafka makes an abortable transaction error: the commit fails,
// AbortTransaction succeeds). A aborts, rewinds the partitions of the
// aborted transaction to the group's committed offsets, rebuilds their
// graphs (the runtime reports them lost, then assigned) and keeps running
// to the end of the input; a read_committed reader sees every input's two
// outputs exactly once, and the committed offsets reach the high
// watermarks. kfake answers a faulted request without processing it, so
// the transaction is still open when A aborts it, as with a real broker
// failing the EndTxn.
func TestExactlyOnceRewindAfterFailedCommit(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), "eosw", parts, perPartition)
	hw := e.hw(t)

	obs := newGroupObserver()
	a := e.start(t, librdkafkaTxn, "A", "eosw-A", 2, pipeline.WithHooks(obs))
	e.waitMidStream(t, perPartition, a)
	failNextCommit(t, e.b, "eosw-A")
	waitFor(t, "A rewinding partitions (lost, then assigned again)", func() bool { return obs.lost.Load() > 0 }, a)
	e.waitInputCommitted(t)
	a.stop(t) // Run returns nil: the abort did not stop it
	if got := obs.assigned.Load(); got <= parts {
		t.Fatalf("A assigned %d partitions, want more than %d (the rewound ones again)", got, parts)
	}
	checkExactlyOnce(t, e.b, e.out, parts, hw)
}

// TestExactlyOnceFencedMemberStops: another producer takes member A's
// transactional id mid-stream (InitProducerID bumps its epoch: A is
// fenced, which librdkafka reports as a fatal error). A's Run stops with
// an error wrapping ErrAborted and ErrFatal instead of rewinding; B, with an id of its
// own, takes over and a read_committed reader sees every input's outputs
// exactly once.
func TestExactlyOnceFencedMemberStops(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewBroker(t), "eosf", parts, perPartition)
	hw := e.hw(t)

	a := e.start(t, librdkafkaTxn, "A", "eosf-A", 2)
	waitFor(t, "A committing transactions on every partition", func() bool { return len(e.b.Committed(t, e.group, e.in)) == parts }, a)
	fence(t, e.b, "eosf-A")
	waitStopped(t, a, "being fenced")
	// The fence surfaces first in a produce stage (the transaction's
	// AddPartitionsToTxn fails), and the abort that follows is refused:
	// both are librdkafka fatal errors, which the abort marks ErrFatal.
	wantAborted(t, a, true)

	bc := e.start(t, librdkafkaTxn, "B", "eosf-B", 0)
	e.finish(t, hw, bc)
}

// fence initializes a producer id for txnID, as a second producer with
// the same transactional id starting does: the previous producer's epoch
// is fenced. It retries while the coordinator ends the transaction the
// previous producer left open (CONCURRENT_TRANSACTIONS).
func fence(t *testing.T, b *kafkatest.Broker, txnID string) {
	t.Helper()
	cl := kafkaClient(t, b)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = 3000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			return
		case ctx.Err() != nil:
			t.Fatalf("fencing %s: %v", txnID, err)
		case !errors.Is(err, kerr.ConcurrentTransactions) && !kerr.IsRetriable(err):
			t.Fatalf("fencing %s: %v", txnID, err)
		}
		time.Sleep(10 * time.Millisecond) // the coordinator is ending the open transaction
	}
}
