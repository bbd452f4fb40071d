package kafkatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A KIP-848 member's assignment is described by topic name on both
// brokers (kfake's ConsumerGroupDescribe sends topic ids only).
func TestGroupNamesTheTopicsOfAKIP848Assignment(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 2))
	ctx := minuteContext(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ClientID("c1"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for !cl.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	var g Group
	for {
		if g, err = b.GroupContext(ctx, "g"); err != nil {
			t.Fatal(err)
		}
		if g.State == "Stable" && len(g.Members) == 1 && len(g.Members[0].Assignment) > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("group %+v, want Stable with one member owning something", g)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if g.Type != "consumer" || g.Members[0].ClientID != "c1" || fmt.Sprint(g.Members[0].Assignment) != "map[t:[0 1]]" {
		t.Fatalf("group %+v, want a consumer group whose member c1 owns map[t:[0 1]]", g)
	}
}
