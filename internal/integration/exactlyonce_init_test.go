package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestExactlyOnceInitRefused: the transaction coordinator answers every
// InitProducerID with COORDINATOR_LOAD_IN_PROGRESS. The librdkafka source
// initializes its producer's transactions before it creates its consumer,
// so no assignment can wait for it: Run returns at CommitTimeout with an
// error naming the transactional id and the broker's error, and the
// group was never joined. (The franz backend's client joins before its
// producer id is initialized: franz/transaction_start_test.go.)
func TestExactlyOnceInitRefused(t *testing.T) {
	t.Parallel()
	const commit = 3 * time.Second
	b := kafkatest.NewKfake(t)
	const in, out, group = "eosi-in", "eosi-out", "eosi-g"
	eosTopics(t, b, in, out, 2, 10)
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: -1})
	joined := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Observe: true, Count: -1})
	src, p := newTxnSourceWith(t, b, group, in, "eosi-A", eosTimings{txn: eosGenerous.txn, commit: commit})

	began := time.Now()
	a := startConsumer(t, "A", src, eosFanOut(sinkProduce(p, out), 0))
	select {
	case <-a.Done():
	case <-time.After(commit + wait):
		t.Fatalf("Run did not return within %v of CommitTimeout", wait)
	}
	err, took := a.Err(), time.Since(began)
	var ke kafka.Error
	if !errors.As(err, &ke) || ke.Code() != kafka.ErrCoordinatorLoadInProgress || !strings.Contains(err.Error(), `"eosi-A"`) {
		t.Fatalf("Run = %v, want an error naming the transactional id and wrapping COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	if took < commit-time.Second { // librdkafka's timer ends a few µs early
		t.Fatalf("Run returned after %v, well before CommitTimeout (%v): the retriable error was not retried", took, commit)
	}
	if refused.Hits() == 0 || joined.Hits() != 0 {
		t.Fatalf("InitProducerID refused %d times, JoinGroup sent %d times: want some, and none", refused.Hits(), joined.Hits())
	}
}
