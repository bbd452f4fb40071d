package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
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
	cl := kafkaClient(t, b)
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

// groupTypes counts the group types seen when reading commits.
type groupTypes struct {
	mu sync.Mutex
	n  map[string]int
}

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
	b := kafkatest.NewBroker(t)
	sourcetest.Run(t, kafkadriver.Driver{
		Broker: b,
		// newFranzSource's classic heartbeat and session options are
		// ignored by kgo in a KIP-848 group: the broker's
		// group.consumer.* settings decide.
		Source: func(t *testing.T, group, topic string) sluice.Source {
			return newFranzSource(t, b, group, topic, franz848()...)
		},
		// Every scenario's group type, to check that kgo did not fall
		// back to the classic protocol.
		ReadingCommits: func(t *testing.T, group string) {
			typ := groupType(t, b, group)
			types.mu.Lock()
			types.n[typ]++
			types.mu.Unlock()
		},
	})
}

// TestGroupMembershipChurnConsumerProtocol is TestGroupMembershipChurn on
// the franz source in a KIP-848 group: three members join and
// leave mid-stream, the broker assigns; every offset is processed, every
// ownership starts at the committed offset, the commits end at the high
// watermarks, the group is a KIP-848 one and, the protocol being
// incremental, nothing is processed twice.
func TestGroupMembershipChurnConsumerProtocol(t *testing.T) {
	t.Parallel()
	churn(t, "consumer", 10_000, franzMember(franz848()...))
}
