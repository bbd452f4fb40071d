package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// franz848 are the kgo options of a franz source in a KIP-848 group: kgo
// runs the consumer protocol only with ServerSideBalancer and a range or
// sticky first balancer (consumer_group_848.go, should848), and falls back
// to the classic protocol otherwise, so every test here also checks the
// group's type (groupType). The sticky balancer asks the broker for its
// "uniform" assignor, the one librdkafka's group.protocol=consumer gets by
// default.
func franz848() []kgo.Opt {
	return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer())}
}

// groupType asks the broker for the type of group: "consumer" for a
// KIP-848 group, "classic" otherwise, empty when the broker does not list
// it (kfake drops a KIP-848 group once it is empty).
func groupType(t testing.TB, b *kafkatest.Broker, group string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupType
		}
	}
	return ""
}

// franz848Driver runs the source conformance suite against the franz
// source in KIP-848 groups on the embedded broker.
type franz848Driver struct {
	b     *kafkatest.Broker
	types *groupTypes
}

// groupTypes counts the group types Committed saw.
type groupTypes struct {
	mu sync.Mutex
	n  map[string]int
}

func (d franz848Driver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.b.CreateTopic(t, topic, partitions)
}

func (d franz848Driver) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	d.b.Produce(t, topic, recs...)
}

// NewSource returns a franz source in a KIP-848 group (newFranzSource's
// classic heartbeat and session options are ignored by kgo there: the
// broker's group.consumer.* settings decide).
func (d franz848Driver) NewSource(t *testing.T, group, topic string) sluice.Source {
	return newFranzSource(t, d.b, group, topic, franz848()...)
}

// Committed also records the type of the scenario's group, for
// TestFranzSourceConformanceConsumerProtocol to check that kgo did not
// fall back to the classic protocol.
func (d franz848Driver) Committed(t *testing.T, group, topic string) map[int32]int64 {
	typ := groupType(t, d.b, group)
	d.types.mu.Lock()
	d.types.n[typ]++
	d.types.mu.Unlock()
	return d.b.Committed(t, group, topic)
}

// Evict answers every ConsumerGroupHeartbeat of the group with
// FENCED_MEMBER_EPOCH until readmit: kgo abandons its partitions as lost
// (OnPartitionsLost) and rejoins with epoch 0, which is fenced again. The
// classic keys are faulted too, so that a fallback cannot dodge it (the
// check in Committed would then fail).
func (d franz848Driver) Evict(t *testing.T, group, _ string) (readmit func()) {
	cluster, ok := d.b.Kfake()
	if !ok {
		t.Skip("evicting a member takes kfake's fault injection (rejected heartbeats and joins); Apache Kafka has no such control")
	}
	faults := cluster.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.ConsumerGroupHeartbeat}, Group: group, Err: kerr.FencedMemberEpoch, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
	)
	t.Cleanup(faults.Remove)
	return faults.Remove
}

var _ sourcetest.Evicter = franz848Driver{}

// TestFranzSourceConformanceConsumerProtocol runs testkit/sourcetest
// (the same exact commits as the fake and the librdkafka source) on the
// franz source in KIP-848 groups. Every group the scenarios' commits were
// read from, while the broker still listed it, was a KIP-848 one.
func TestFranzSourceConformanceConsumerProtocol(t *testing.T) {
	types := &groupTypes{n: map[string]int{}}
	t.Cleanup(func() { // after the scenarios, which run in parallel
		types.mu.Lock()
		defer types.mu.Unlock()
		if types.n["consumer"] == 0 || len(types.n) > 2 || (len(types.n) == 2 && types.n[""] == 0) {
			t.Errorf("group types seen when reading commits: %v, want only consumer (KIP-848), or unlisted", types.n)
		}
		t.Logf("group types seen when reading commits: %v", types.n)
	})
	sourcetest.Run(t, franz848Driver{b: kafkatest.NewBroker(t), types: types})
}

// TestFranzGroupMembershipChurnConsumerProtocol is
// TestFranzGroupMembershipChurn in a KIP-848 group: three members join and
// leave mid-stream, the broker assigns; every offset is processed, every
// ownership starts at the committed offset, the commits end at the high
// watermarks, the group is a KIP-848 one and, the protocol being
// incremental, nothing is processed twice.
func TestFranzGroupMembershipChurnConsumerProtocol(t *testing.T) {
	t.Parallel()
	franzChurn(t, "consumer", franz848()...)
}
