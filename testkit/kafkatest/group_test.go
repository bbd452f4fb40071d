package kafkatest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
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

// Commit sets a group's offsets as an operator's tool does: Committed
// reads back exactly what was committed, a partition left out stays
// uncommitted, and a later Commit moves an offset (backwards too).
func TestCommitIsWhatCommittedReads(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 3))
	b.Commit(t, "g", "t", map[int32]int64{0: 7, 1: 3})
	if got := b.Committed(t, "g", "t"); fmt.Sprint(got) != "map[0:7 1:3]" {
		t.Fatalf("Committed after Commit = %v, want map[0:7 1:3]", got)
	}
	b.Commit(t, "g", "t", map[int32]int64{0: 5})
	if got := b.Committed(t, "g", "t"); fmt.Sprint(got) != "map[0:5 1:3]" {
		t.Fatalf("Committed after a second Commit = %v, want map[0:5 1:3]", got)
	}
}

// A share group whose share.auto.offset.reset was set to earliest before
// its first start reads the records produced before it existed.
func TestSetGroupConfigShareFromEarliest(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 1))
	b.Produce(t, "t", sluice.Record{Value: []byte("before")})
	b.SetGroupConfig(t, "sg", "share.auto.offset.reset", "earliest")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ShareGroup("sg"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := minuteContext(t)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the share group read nothing within a minute: %v", ctx.Err())
		}
		if rs := fs.Records(); len(rs) > 0 {
			if len(rs) != 1 || string(rs[0].Value) != "before" || rs[0].Offset != 0 {
				t.Fatalf("the share group read %d records, the first %q at %d; want one, \"before\" at 0", len(rs), rs[0].Value, rs[0].Offset)
			}
			return
		}
	}
}

// A group config the broker refuses is an error naming the config and
// the group.
func TestSetGroupConfigErrorNamesIt(t *testing.T) {
	b := NewBroker(t)
	err := b.SetGroupConfigContext(minuteContext(t), "g", "no.such.config", "1")
	if err == nil || !strings.Contains(err.Error(), `set no.such.config of group "g"`) {
		t.Fatalf("SetGroupConfigContext of an unknown config = %v, want an error naming it and the group", err)
	}
}
