package source

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Stopping a cooperative consumer in the middle of a rebalance: A is told
// to stop inside the revoke callback of the rebalance B's arrival causes,
// so when A closes, librdkafka still has the assignment half of that
// rebalance for A to serve. Serving it, and the revoke librdkafka then
// raises, can block IncrementalUnassign forever when the consumer group
// terminates in between (librdkafka#4884), so Close does neither. Run must
// return, and every record must be committed exactly once by A or B.
func TestCloseDuringCooperativeRebalance(t *testing.T) {
	const parts = 6
	roundsOnTopicIn(t, 4, parts, 200, func(t *testing.T, b *kafkatest.Broker) {
		ctxA, cancelA := context.WithCancel(context.Background())
		defer cancelA()
		a := newFakeGroup()
		var once sync.Once
		a.onRevoke = func([]TP) { once.Do(cancelA) }
		doneA := make(chan error, 1)
		srcA := newSource(t, b, "g", "in", nil)
		go func() { doneA <- srcA.Run(ctxA, a) }()
		a.waitUntil(t, wait, "A consumes all", delivered(200*parts))

		bg := newFakeGroup()
		rb := start(t, newSource(t, b, "g", "in", nil), bg)

		select {
		case err := <-doneA:
			if err != nil {
				t.Fatalf("A: Run = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("A: Run did not return 20s after its context was cancelled during a rebalance")
		}
		if n := srcA.closeCallbacks.Load(); n != 0 {
			t.Errorf("A: %d rebalance callbacks ran inside the client's Close, want 0", n)
		}
		bg.waitUntil(t, wait, "B owns every partition", func(f *fakeGroup) bool { return len(f.assigned) == parts })
		b.Produce(t, "in", producertest.Input(parts, 200, 50)...)
		total := func() int {
			var s int
			a.with(func(f *fakeGroup) { s += f.total })
			bg.with(func(f *fakeGroup) { s += f.total })
			return s
		}
		waitAll(t, wait, "B consumes the rest", func() bool { return total() >= 250*parts }, a, bg)
		if err := rb.stop(t); err != nil {
			t.Fatalf("B: Run = %v", err)
		}
		checkExactlyOnce(t, b.HighWatermarks(t, "in"), a, bg)
		checkCommitted(t, b, "g", "in")
	})
}

// Three members of a cooperative group stop at the same moment, the
// observed case: each one's leaving rebalances the others while they
// shut down. Every Run returns promptly, no rebalance reaches Close, and
// every record is committed.
func TestThreeMembersStopTogether(t *testing.T) {
	const parts = 9
	roundsOnTopicIn(t, 3, parts, 100, func(t *testing.T, b *kafkatest.Broker) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var (
			gs   []*fakeGroup
			srcs []*Source
			done = make(chan error, 3)
		)
		for range 3 {
			g, src := newFakeGroup(), newSource(t, b, "g", "in", nil)
			gs, srcs = append(gs, g), append(srcs, src)
			go func() { done <- src.Run(ctx, g) }()
		}
		waitAll(t, wait, "all records consumed, every member owning partitions", func() bool {
			var owned, sum int
			for _, g := range gs {
				var n int
				g.with(func(f *fakeGroup) { n, sum = len(f.assigned), sum+f.total })
				if n == 0 {
					return false
				}
				owned += n
			}
			return owned == parts && sum >= 100*parts
		}, gs...)

		cancel()
		timeout := time.After(15 * time.Second)
		for range 3 {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-timeout:
				t.Fatalf("a member's Run did not return 15s after all three were cancelled")
			}
		}
		for i, src := range srcs {
			if n := src.closeCallbacks.Load(); n != 0 {
				t.Errorf("member %d: %d rebalance callbacks ran inside Close, want 0", i, n)
			}
		}
		checkExactlyOnce(t, b.HighWatermarks(t, "in"), gs...)
		checkCommitted(t, b, "g", "in")
	})
}

// roundsOnTopicIn runs test rounds times, as parallel subtests of t named
// 0, 1, ..., each on a new broker whose topic "in" has parts partitions
// of n records each (topicIn).
func roundsOnTopicIn(t *testing.T, rounds int, parts int32, n int, test func(t *testing.T, b *kafkatest.Broker)) {
	t.Parallel()
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			test(t, topicIn(t, kafkatest.NewBroker(t), parts, n))
		})
	}
}
