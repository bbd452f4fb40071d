package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestOffsetStoreClaimErrorStopsRun: the store fails the claim of the
// first assignment. Run returns an error naming Config.OffsetStore, the
// group and the partitions, wrapping the store's; no graph was built,
// nothing was committed.
func TestOffsetStoreClaimErrorStopsRun(t *testing.T) {
	b := kafkatest.NewBroker(t)
	for _, c := range storeClients() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			const parts = 2
			topic, group := c.names(t, "oserr")
			b.CreateTopic(t, topic, parts)
			b.Fill(t, topic, 10, 8)
			l := &storeLog{}
			errStore := errors.New("store unreachable")
			store := &recordingStore{member: "A", log: l, err: errStore}
			var built atomic.Int64
			build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				built.Add(1)
				return stages.Discard(in)
			}
			a := startConsumer(t, "A", c.newSource(t, b, group, topic, store), build)
			err := a.Wait(t)
			if !errors.Is(err, errStore) {
				t.Fatalf("Run = %v, want an error wrapping the store's", err)
			}
			claims := l.claims("A")
			if len(claims) != 1 {
				t.Fatalf("Claim calls %v, want one", claims)
			}
			msg := err.Error()
			want := []string{"Config.OffsetStore", fmt.Sprintf("%q", group)}
			for _, tp := range claims[0] {
				want = append(want, fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition))
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("Run = %q, want it to name %s", msg, w)
				}
			}
			if n := built.Load(); n != 0 {
				t.Errorf("%d graphs built after the claim failed, want none", n)
			}
			if got := b.Committed(t, group, topic); len(got) != 0 {
				t.Errorf("group committed %v after the claim failed, want nothing", got)
			}
		})
	}
}

// TestOffsetStoreClaimErrorOnLaterAssignment: A's store answers its first
// claim and fails the next. A consumes alone; B joins, then leaves: the
// rebalance that gives A partitions it did not own (B's join under eager
// assignment, B's leave under cooperative and KIP-848) makes A's claim
// fail, and A's Run returns an error naming those partitions, wrapping
// the store's, while B's Run ends cleanly.
func TestOffsetStoreClaimErrorOnLaterAssignment(t *testing.T) {
	b := kafkatest.NewBroker(t)
	for _, c := range storeClients() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			const parts = 4
			topic, group := c.names(t, "oserr2")
			b.CreateTopic(t, topic, parts)
			b.Fill(t, topic, 10, 8)
			l := &storeLog{}
			errStore := errors.New("store unreachable")
			discard := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(in)
			}
			a := startConsumer(t, "A", c.newSource(t, b, group, topic, &recordingStore{member: "A", log: l, err: errStore, okCalls: 1}), discard)
			b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
			bObs := newGroupObserver()
			bm := startConsumer(t, "B", c.newSource(t, b, group, topic, &recordingStore{member: "B", log: l}), discard, pipeline.WithHooks(bObs))
			waitFor(t, "B owning partitions", func() bool { return bObs.owns() > 0 }, bm)
			bm.stop(t)
			err := a.Wait(t)
			if !errors.Is(err, errStore) {
				t.Fatalf("A's Run = %v, want an error wrapping the store's", err)
			}
			claims := l.claims("A")
			if len(claims) != 2 {
				t.Fatalf("A's Claim calls %v, want two", claims)
			}
			for _, tp := range claims[1] {
				if w := fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition); !strings.Contains(err.Error(), w) {
					t.Errorf("A's Run = %q, want it to name %s", err, w)
				}
			}
		})
	}
}
