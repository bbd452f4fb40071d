package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnProducer is a transactional kgo client writing to outputTopic, each
// record to the partition it names.
func txnProducer(t *testing.T, c *cluster, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.b.Addrs()...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(outputTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// inTxn begins a transaction and produces value to each partition of ps.
func inTxn(t *testing.T, cl *kgo.Client, value string, ps ...int32) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: p, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func endTxn(t *testing.T, cl *kgo.Client, commit kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.EndTransaction(context.Background(), commit); err != nil {
		t.Fatal(err)
	}
}

func values(rs []sluice.Record) string {
	var vs []string
	for _, r := range rs {
		vs = append(vs, fmt.Sprintf("%d:%s", r.Partition, r.Value))
	}
	return strings.Join(vs, " ")
}

// The final read of the exactly-once mode: waitStable names the partition
// an open transaction holds back and returns once it ended; readAll with
// read_committed then returns only committed records, and gets past the
// markers to the high watermark (kfake writes the markers and moves the
// last stable offset itself at EndTxn, as Kafka's brokers do).
func TestReadCommittedAfterTheTransactionsEnd(t *testing.T) {
	c := testCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := txnProducer(t, c, "t1")
	inTxn(t, cl, "a", 0, 1)
	endTxn(t, cl, kgo.TryCommit)
	inTxn(t, cl, "b", 0, 1)
	endTxn(t, cl, kgo.TryAbort)
	inTxn(t, cl, "c", 0) // open on partition 0 only

	_, err := c.waitStable(ctx, 300*time.Millisecond, outputTopic, deadTopic)
	if err == nil || !strings.Contains(err.Error(), "events-enriched/0: last stable offset 4, high watermark 5") ||
		strings.Contains(err.Error(), "events-enriched/1") {
		t.Fatalf("waitStable with a transaction open on partition 0: %v, want an error naming events-enriched/0 only", err)
	}
	endTxn(t, cl, kgo.TryCommit)
	if _, err := c.waitStable(ctx, 10*time.Second, outputTopic, deadTopic); err != nil {
		t.Fatalf("waitStable once every transaction ended: %v", err)
	}

	got, err := c.readAll(ctx, outputTopic, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "0:a 0:c 1:a"; values(got) != want {
		t.Errorf("read_committed: %q, want %q (b aborted, no markers)", values(got), want)
	}
	got, err = c.readAll(ctx, outputTopic, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "0:a 0:b 0:c 1:a 1:b"; values(got) != want {
		t.Errorf("read_uncommitted: %q, want %q", values(got), want)
	}
}

// What a SIGKILL leaves is described (the open transaction and its
// partitions), and killedTxns measures when the broker ended it.
func TestKilledTransactionIsDescribedAndWatchedToItsEnd(t *testing.T) {
	c := testCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.transaction(ctx, "nobody"); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("transaction of an unknown id: %v, want an error naming it", err)
	}
	cl := txnProducer(t, c, "t2")
	inTxn(t, cl, "a", 1)
	st, err := c.transaction(ctx, "t2")
	if err != nil || st.String() != "transaction Ongoing on events-enriched [1]" {
		t.Fatalf("transaction t2: %v, %v; want ongoing on events-enriched [1]", st, err)
	}
	k := newKilledTxns()
	k.watch(c, "t2", time.Now())
	endTxn(t, cl, kgo.TryAbort) // the broker's abort at the timeout, sooner
	ended, open := k.wait(30 * time.Second)
	if len(ended) != 1 || open != 0 {
		t.Fatalf("ended %v, %d open; want one ended", ended, open)
	}
	if st, err := c.transaction(ctx, "t2"); err != nil || st.String() != "no transaction open" {
		t.Fatalf("transaction t2 after its end: %v, %v", st, err)
	}
	open3 := txnProducer(t, c, "t3")
	inTxn(t, open3, "x", 0)
	k = newKilledTxns()
	k.watch(c, "t3", time.Now())
	if ended, open := k.wait(300 * time.Millisecond); len(ended) != 0 || open != 1 {
		t.Fatalf("a transaction still open: ended %v, %d open; want 1 open", ended, open)
	}
	endTxn(t, open3, kgo.TryAbort)
}
