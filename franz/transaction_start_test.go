package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// within calls wait (a testkit.Running's Wait or Stop) and fails the
// test unless Run returned within bound.
func within(t *testing.T, bound time.Duration, wait func(testing.TB) error) error {
	t.Helper()
	began := time.Now()
	err := wait(t)
	if took := time.Since(began); took > bound {
		t.Fatalf("Run returned after %v, not within %v", took, bound)
	}
	return err
}

// newTxnSource returns a franz source of group on topic with a
// transactional producer bound to it, initialized within commitTimeout.
func newTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string, commitTimeout time.Duration) (*franz.Source, *franz.Producer) {
	t.Helper()
	src := newSource(t, b.Addrs(), group, topic)
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
		TransactionConfig: sink.TransactionConfig{TransactionalID: txnID, CommitTimeout: commitTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return src, p
}

// initRefused makes the transaction coordinator answer every
// InitProducerID with COORDINATOR_LOAD_IN_PROGRESS (kgo retries it until
// the context ends) and returns an observer of the group's SyncGroup
// requests: once one arrived, kgo joined and calls OnPartitionsAssigned.
func initRefused(b *kafkatest.Broker, group string) (refused, synced *kfake.FaultHandle) {
	refused = b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: -1})
	synced = b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.SyncGroup}, Group: group, Observe: true, Count: -1})
	return refused, synced
}

// The producer id cannot be initialized (InitProducerID answered
// COORDINATOR_LOAD_IN_PROGRESS until CommitTimeout ends) while kgo has
// already joined the group and called OnPartitionsAssigned: Run returns
// an error naming the transactional id and the broker's error, having
// closed the client (goleak: nothing of it is left running).
func TestTransactionalRunReturnsWhenTheProducerIDCannotInit(t *testing.T) {
	t.Parallel()
	const commitTimeout = 3 * time.Second
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 1)
	refused, synced := initRefused(b, "g")
	src, p := newTxnSource(t, b, "g", "in", "txn-init-refused", commitTimeout)

	r := testkit.Start(t, src, produceTo(p, "out"))
	err := within(t, commitTimeout+wait, r.Wait)
	if synced.Hits() == 0 {
		t.Fatalf("Run returned %v before kgo joined the group: the assignment did not wait for the producer", err)
	}
	if refused.Hits() == 0 {
		t.Fatalf("no InitProducerID was refused")
	}
	t.Logf("Run = %v", err)
	if err == nil || !strings.Contains(err.Error(), `"txn-init-refused"`) || !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("Run = %v, want an error naming the transactional id and wrapping COORDINATOR_LOAD_IN_PROGRESS", err)
	}
}

// Run's context is cancelled while the producer id cannot be initialized
// (CommitTimeout is far away) and kgo has already joined the group: Run
// returns nil at once (a shutdown with nothing to commit), having closed
// the client.
func TestTransactionalRunReturnsWhenCancelledDuringProducerIDInit(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 1)
	_, synced := initRefused(b, "g")
	src, p := newTxnSource(t, b, "g", "in", "txn-init-cancelled", time.Hour)

	r := testkit.Start(t, src, produceTo(p, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := synced.Wait(ctx, 1); err != nil {
		t.Fatalf("kgo did not join the group: %v", err)
	}
	if err := within(t, wait, r.Stop); err != nil {
		t.Fatalf("Run = %v, want nil: cancelled before anything was assigned to the graphs", err)
	}
}
