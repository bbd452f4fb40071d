package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// errStore is the error of a recordingStore whose claims fail.
var errStore = errors.New("store unreachable")

// TestOffsetStoreClaimErrorStopsRun: the store fails the claim of the
// first assignment. Run returns an error naming Config.OffsetStore, the
// group and the partitions, wrapping the store's; no graph was built,
// nothing was committed.
func TestOffsetStoreClaimErrorStopsRun(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		f := startClaimFailure(t, b, c, "oserr", 2, 0)
		claimed, err := waitClaimError(t, f.a, f.log, 1)
		wantNames(t, err, claimed, "Config.OffsetStore", fmt.Sprintf("%q", f.group))
		if n := f.built.Load(); n != 0 {
			t.Errorf("%d graphs built after the claim failed, want none", n)
		}
		if got := b.Committed(t, f.group, f.topic); len(got) != 0 {
			t.Errorf("group committed %v after the claim failed, want nothing", got)
		}
	})
}

// TestOffsetStoreClaimErrorOnLaterAssignment: A's store answers its first
// claim and fails the next. A consumes alone; B joins, then leaves: the
// rebalance that gives A partitions it did not own (B's join under eager
// assignment, B's leave under cooperative and KIP-848) makes A's claim
// fail, and A's Run returns an error naming those partitions, wrapping
// the store's, while B's Run ends cleanly.
func TestOffsetStoreClaimErrorOnLaterAssignment(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		f := startClaimFailure(t, b, c, "oserr2", 4, 1)
		b.WaitCommitted(t, f.group, f.topic, b.HighWatermarks(t, f.topic))
		bObs := newGroupObserver()
		discard, _ := countingDiscard()
		bm := startConsumer(t, "B", c.newSource(t, b, f.group, f.topic, &recordingStore{member: "B", log: f.log}), discard, pipeline.WithHooks(bObs))
		waitFor(t, "B owning partitions", func() bool { return bObs.owns() > 0 }, bm)
		bm.stop(t)
		claimed, err := waitClaimError(t, f.a, f.log, 2)
		wantNames(t, err, claimed)
	})
}

// claimFailure is member A consuming a topic of 10 records per partition
// through a recordingStore that answers its first okCalls claims and
// fails the later ones with errStore.
type claimFailure struct {
	topic, group string
	log          *storeLog     // the Claim calls of A (and of any member sharing it)
	built        *atomic.Int64 // graphs A built
	a            *consumer
}

// startClaimFailure creates the topic prefix (parts partitions) and
// starts A on it, its graphs discarding every record.
func startClaimFailure(t *testing.T, b *kafkatest.Broker, c storeClient, prefix string, parts int32, okCalls int) *claimFailure {
	t.Helper()
	f := &claimFailure{log: &storeLog{}}
	f.topic, f.group = c.topic(t, b, prefix, parts, 10)
	var build pipeline.Builder
	build, f.built = countingDiscard()
	store := &recordingStore{member: "A", log: f.log, err: errStore, okCalls: okCalls}
	f.a = startConsumer(t, "A", c.newSource(t, b, f.group, f.topic, store), build)
	return f
}

// waitClaimError waits until a's Run ends with an error wrapping
// errStore, after exactly n Claim calls of member A in l, and returns
// the partitions of the last call and the error.
func waitClaimError(t *testing.T, a *consumer, l *storeLog, n int) ([]sluice.TopicPartition, error) {
	t.Helper()
	err := a.Wait(t)
	if !errors.Is(err, errStore) {
		t.Fatalf("A's Run = %v, want an error wrapping the store's", err)
	}
	claims := l.claims("A")
	if len(claims) != n {
		t.Fatalf("A's Claim calls %v, want %d", claims, n)
	}
	return claims[n-1], err
}

// wantNames fails t unless err's text names each partition of tps, as
// topic[partition], and contains each of names.
func wantNames(t *testing.T, err error, tps []sluice.TopicPartition, names ...string) {
	t.Helper()
	for _, tp := range tps {
		names = append(names, fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition))
	}
	for _, w := range names {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("A's Run = %q, want it to name %s", err, w)
		}
	}
}
