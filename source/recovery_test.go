package source

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// joinAndDie makes a raw client join group (cooperative-sticky, for topic)
// and then behave as a crashed process: no SyncGroup, no heartbeat, no
// LeaveGroup. Its own rebalance timeout is 1s and its session 60s, so
// how long the group waits for it is set by the surviving member's
// rebalance timeout (the largest of the members'), which librdkafka takes
// from max.poll.interval.ms. It returns when its JoinGroup was answered.
func joinAndDie(t *testing.T, b *kafkatest.Broker, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // a raw client: closing sends nothing to the group
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	meta.Topics = []string{topic}
	join := func(memberID string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = group
		req.MemberID = memberID
		req.SessionTimeoutMillis = 60000
		req.RebalanceTimeoutMillis = 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "cooperative-sticky"
		p.Metadata = meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		return req.RequestWith(ctx, cl)
	}
	resp, err := join("")
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.MemberIDRequired) {
		t.Fatalf("first JoinGroup: %v, want MEMBER_ID_REQUIRED", err)
	}
	resp, err = join(resp.MemberID) // answered once the group has rejoined
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("JoinGroup: %v", err)
	}
}

// A member that joins and dies mid-rebalance holds the partitions the
// rebalance gave it until the group gives up on it, after the rebalance
// timeout. With librdkafka's max.poll.interval.ms (300s) that was five
// minutes with nothing consumed; the source derives it from the drain
// timeout (here: drain 2s + commit timeout 0.4s + 6s, raised to the
// session timeout, 10s), and the survivor owns every partition again within it.
// kfake, like Kafka, removes a member that never sends SyncGroup after the
// group's rebalance timeout and waits the same for members to rejoin.
// kfake differs in one place: when it removes the dead member it restarts
// the join timer instead of completing the join the survivor already
// sent, so there the survivor's JoinGroup request times out (librdkafka:
// rebalance timeout + 3s) and it rejoins; the test allows twice the
// rebalance timeout. With Kafka it is the rebalance timeout plus a
// heartbeat.
func TestDeadMemberMidRebalanceBounded(t *testing.T) {
	t.Parallel()
	const parts = 4
	b := topicIn(t, kafkatest.NewBroker(t), parts, 50)

	src, err := NewSource(Config{ // the source's own group timeouts: no overrides
		GroupConfig: sluice.GroupConfig{
			Brokers:        b.Addrs(),
			Group:          "g",
			Topics:         []string{"in"},
			CommitInterval: 50 * time.Millisecond,
			CloseTimeout:   time.Second,
			Logger:         kafkatest.Logger(t),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const rebalanceTimeout = 10 * time.Second // max(2s + 0.4s + 6s, session 10s)
	a := newFakeGroup()
	a.drain = 2 * time.Second
	r := start(t, src, a)
	a.waitUntil(t, wait, "A consumes all", delivered(50*parts))

	joinAndDie(t, b, "g", "in")
	died := time.Now()
	a.waitUntil(t, wait, "A gives partitions to the new member", func(f *fakeGroup) bool { return len(f.revokes) > 0 })
	a.waitUntil(t, 2*rebalanceTimeout, "A owns every partition again", func(f *fakeGroup) bool {
		return len(f.assigned) == parts
	})
	took := time.Since(died)
	t.Logf("partitions back %v after the member died (rebalance timeout %v)", took, rebalanceTimeout)

	b.Produce(t, "in", producertest.Input(parts, 50, 50)...)
	a.waitUntil(t, wait, "A consumes what came after", func(f *fakeGroup) bool {
		for p := range int32(parts) {
			if f.next[TP{Topic: "in", Partition: p}] != 100 {
				return false
			}
		}
		return true
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, b.HighWatermarks(t, "in"), a)
	checkCommitted(t, b, "g", "in")
}
