//go:build linux

package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
)

func needApache(t *testing.T) {
	t.Helper()
	if k, _ := KindFromEnv(); k != Apache {
		t.Skipf("needs Apache Kafka (%s=apache)", EnvBroker)
	}
}

// A pooled broker is handed to the next test as a new one would be: the
// topics, groups, committed offsets and group configs of the previous test
// are gone, and a topic of the same name starts again at offset 0.
func TestPooledBrokerForgetsThePreviousTest(t *testing.T) {
	needApache(t)
	var addr string
	t.Run("first", func(t *testing.T) {
		b := NewBroker(t, WithTopic("t", 3))
		addr = b.Addr()
		ctx := minuteContext(t)
		var recs []sluice.Record
		for i := range 9 {
			recs = append(recs, sluice.Record{Partition: int32(i % 3), Value: []byte{byte(i)}})
		}
		b.Produce(t, "t", recs...)
		b.Commit(t, "g", "t", map[int32]int64{0: 2, 1: 2, 2: 2})
		b.SetGroupConfig(t, "sg", "share.auto.offset.reset", "earliest")
		b.SetGroupConfig(t, "g", "consumer.session.timeout.ms", "7000")
		txnProduce(ctx, t, b, "tx", "t", true)
		txnProduce(ctx, t, b, "tx", "t", false)
		consumeOne(ctx, t, b, false, kgo.ShareGroup("sg"), kgo.ConsumeTopics("t"))
		consumeOne(ctx, t, b, true, kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ServerSideBalancer())
	})
	t.Run("second", func(t *testing.T) {
		b := NewBroker(t)
		if b.Addr() != addr {
			t.Skip("the pool handed out another broker")
		}
		ctx := minuteContext(t)
		if _, _, err := b.OffsetsContext(ctx, "t"); !errors.Is(err, errUnknownTopic) {
			t.Errorf("offsets of the previous test's topic: %v, want %v", err, errUnknownTopic)
		}
		b.CreateTopic(t, "t", 3)
		if hw, lso := b.HighWatermarks(t, "t"), b.LogStartOffsets(t, "t"); fmt.Sprint(hw, lso) != "map[0:0 1:0 2:0] map[0:0 1:0 2:0]" {
			t.Errorf("re-created topic: high watermarks %v, log start offsets %v, want all 0", hw, lso)
		}
		for _, g := range []string{"g", "g848", "sg"} {
			if c := b.Committed(t, g, "t"); len(c) != 0 {
				t.Errorf("group %s: committed %v, want none", g, c)
			}
			if gr := b.Group(t, g); gr.Type != "" {
				t.Errorf("group %s: %+v, want unknown", g, gr)
			}
		}
		for _, g := range []string{"sg", "g"} {
			if v, ok := groupConfig(ctx, t, b, g, groupConfigOf(g)); ok {
				t.Errorf("group %s: %s=%s left by the previous test", g, groupConfigOf(g), v)
			}
		}
		b.Produce(t, "t", sluice.Record{Partition: 1, Value: []byte("x")})
		if got := b.ReadAll(t, "t"); len(got) != 1 || got[0].Offset != 0 {
			t.Errorf("ReadAll after one record: %+v, want one record at offset 0", got)
		}
	})
}

func groupConfigOf(group string) string {
	if group == "sg" {
		return "share.auto.offset.reset"
	}
	return "consumer.session.timeout.ms"
}

// adminRequest sends req with b's admin client and returns the response,
// failing the test when the request fails.
func adminRequest[R kmsg.Response](ctx context.Context, t *testing.T, b *Broker, req kmsg.Request) R {
	t.Helper()
	cl, err := b.client(&b.adm)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

// groupConfig returns the dynamic value of a group config, if one is set.
func groupConfig(ctx context.Context, t *testing.T, b *Broker, group, name string) (string, bool) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.ConfigNames = []string{name}
	req.Resources = append(req.Resources, res)
	resp := adminRequest[*kmsg.DescribeConfigsResponse](ctx, t, b, req)
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("describe group %s config: error code %d", group, r.ErrorCode)
		}
		for _, c := range r.Configs {
			if c.Name == name && c.Source == kmsg.ConfigSourceGroupConfig {
				return deref(c.Value), true
			}
		}
	}
	return "", false
}

// txnProduce writes one record to partition 0 of topic in a transaction
// of txnID, and commits or aborts it.
func txnProduce(ctx context.Context, t *testing.T, b *Broker, txnID, topic string, commit bool) {
	t.Helper()
	cl := openTxn(ctx, t, b, txnID, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("txn")})
	defer cl.Close()
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// openTxn returns a client of txnID that began a transaction and produced
// r in it; the caller ends the transaction and closes the client.
func openTxn(ctx context.Context, t *testing.T, b *Broker, txnID string, r *kgo.Record) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		cl.Close()
		t.Fatal(err)
	}
	return cl
}

// consumeOne polls a group consumer of opts until it has a record, commits
// (unless a share group) and leaves.
func consumeOne(ctx context.Context, t *testing.T, b *Broker, commit bool, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record: %v", ctx.Err())
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
	if !commit {
		return
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
}

// A test closes its broker to have a cluster that is gone (a producer's
// output that no longer answers): after Close, nothing listens at its
// addresses, on kfake as on a pooled Apache Kafka broker, which another
// test must not get while this one still uses the addresses.
func TestClosedBrokerIsGone(t *testing.T) {
	b := NewBroker(t)
	addrs := b.Addrs()
	b.Close()
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, 5*time.Second); err == nil {
			c.Close()
			t.Errorf("%s still answers after Close", a)
		}
	}
}

// The reset between two tests takes milliseconds on a single node: it
// must not wait for a client's cached metadata to age before it sees that
// the topics it deleted are gone (kgo keeps metadata for 5 s).
func TestPoolResetIsQuick(t *testing.T) {
	needApache(t)
	b := NewBroker(t, WithTopic("a", 3), WithTopic("b", 1))
	b.Produce(t, "a", sluice.Record{Partition: 2, Value: []byte("x")})
	b.HighWatermarks(t, "a")
	ctx := minuteContext(t)
	start := time.Now()
	if err := b.ac.reset(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("reset took %v, want well under the 5 s that cached metadata lives", took)
	}
}

// A transaction ended just before the test ends still has its markers
// being written (PrepareCommit, PrepareAbort) for a few milliseconds: the
// reset waits for them rather than closing the cluster, which would cost
// the next test a new broker.
func TestPoolResetWaitsForTransactionMarkers(t *testing.T) {
	needApache(t)
	b := NewBroker(t)
	ctx := minuteContext(t)
	for i := range 10 {
		b.CreateTopic(t, "t", 1)
		txnProduce(ctx, t, b, "tx", "t", i%2 == 0)
		if err := b.ac.reset(ctx); err != nil {
			t.Fatalf("reset after transaction %d ended: %v", i, err)
		}
	}
	// One still open fails the reset (the pool then closes the cluster).
	b.CreateTopic(t, "t", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID("open"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := b.ac.reset(ctx); err == nil || !strings.Contains(err.Error(), "transactions still open: [open]") {
		t.Errorf("reset with a transaction open: %v, want transactions still open: [open]", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
