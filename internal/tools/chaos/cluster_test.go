package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// testCluster starts a scenario's broker for a test: kfake, or Apache
// Kafka when SLUICE_TEST_BROKER=apache.
func testCluster(t *testing.T, partitions int32) *cluster {
	t.Helper()
	kind, err := kafkatest.KindFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := startCluster(ctx, kind, partitions, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", c.b.LogTail(60))
		}
		c.close()
	})
	return c
}

// The suite sees a group as any client would: under each protocol, a
// member's client id, the partitions it owns once the group is Stable,
// and the group's commits; the high watermarks too.
func TestGroupIsSeenThroughTheAdminAPI(t *testing.T) {
	c := testCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if g := c.group(); g.err != nil || g.state != "" || len(g.members) != 0 || len(g.commits) != 0 {
		t.Fatalf("a group nobody joined: %v, commits %v; want no state, no member, no commit", g, g.commits)
	}
	if err := c.b.ProduceContext(ctx, inputTopic, recordsTo(0, 3)...); err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"cooperative-sticky", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			opts := []kgo.Opt{kgo.SeedBrokers(c.b.Addrs()...), kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(inputTopic),
				kgo.ClientID("p0." + protocol), kgo.DisableAutoCommit(), kgo.SessionTimeout(4 * time.Second)}
			if protocol == "consumer" {
				opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
			} else {
				opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var n int
			for n < 3 {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("read %d of 3 records: %v", n, ctx.Err())
				}
				n += fs.NumRecords()
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
			var g groupState
			for g = c.group(); g.state != "Stable" || len(g.members["p0."+protocol]) != 2; g = c.group() {
				if ctx.Err() != nil {
					t.Fatalf("group %v, want Stable with p0.%s owning both partitions", g, protocol)
				}
				time.Sleep(c.pollEvery)
			}
			if got := fmt.Sprint(g.members, g.commits); got != fmt.Sprintf("map[p0.%s:[0 1]] map[0:3]", protocol) {
				t.Fatalf("members and commits %s", got)
			}
			if got, err := c.protocolInUse(ctx); err != nil || got != protocol {
				t.Fatalf("protocolInUse = %q, %v; want %q", got, err, protocol)
			}
			cl.Close()
			for g = c.group(); len(g.members) != 0; g = c.group() {
				if ctx.Err() != nil {
					t.Fatalf("group %v after the member left, want no member", g)
				}
				time.Sleep(c.pollEvery)
			}
			if !slices.Contains([]string{"Empty", "Dead"}, g.state) {
				t.Fatalf("group state %q after the member left, want Empty", g.state)
			}
			// Let the group go, so that the next protocol starts a new
			// one (a classic group cannot become a KIP-848 one while it
			// has commits, on kfake).
			if _, err := c.adm.DeleteGroup(ctx, groupName); err != nil {
				t.Fatal(err)
			}
		})
	}
	hw, err := c.highWatermarks(ctx, inputTopic)
	if err != nil || fmt.Sprint(hw) != "map[0:3 1:0]" {
		t.Fatalf("highWatermarks = %v, %v; want map[0:3 1:0]", hw, err)
	}
}

// recordsTo are n records for partition p.
func recordsTo(p int32, n int) []sluice.Record {
	out := make([]sluice.Record, n)
	for i := range out {
		out[i] = sluice.Record{Partition: p, Value: []byte(fmt.Sprint(i))}
	}
	return out
}
