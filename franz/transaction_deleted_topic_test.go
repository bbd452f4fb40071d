package franz

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Exactly-once on topics orders and stays, the client speaking the
// protocol of Kafka 3.9: orders is deleted (not recreated) while its
// first record is in flight, before the group committed anything on it.
// The transaction that follows cannot commit orders' offset and aborts;
// its rewind finds orders gone (no committed offset, and no reset offset
// for a topic the broker does not know). Run must go on: stays is
// consumed on, and Run returns nil when stopped.
func TestTransactionalSourceTopicDeletedUncommittedKafka39(t *testing.T) {
	testTopicDeletedUncommitted(t, kafka39Protocol...)
}

// As TestTransactionalSourceTopicDeletedUncommittedKafka39, with the
// client's own protocol versions.
func TestTransactionalSourceTopicDeletedUncommitted(t *testing.T) {
	testTopicDeletedUncommitted(t)
}

func testTopicDeletedUncommitted(t *testing.T, opts ...kgo.Opt) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "stays"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t)}, Opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	end := txnEnd(t, b, src)
	g, build := newHeldGraph("old-0", func(r sluice.Record) string {
		return fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
	}, end)
	cancel, done := startRun(t, src, build)
	deadline := time.After(kafkadriver.RecreateWait)
	await := func(v string) {
		t.Helper()
		for {
			select {
			case got := <-g.seen:
				if got == v {
					return
				}
			case err := <-done:
				t.Fatalf("Run returned %v while %s was awaited", err, v)
			case <-deadline:
				t.Fatalf("%s not processed within %v", v, kafkadriver.RecreateWait)
			}
		}
	}
	g.waitHeld(t, deadline)
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	close(g.release)
	await("stays:stay-0@0")
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-1")})
	await("stays:stay-1@1")
	stopRun(t, cancel, done)
}

// Rewind of partitions of a deleted topic on which the group committed
// nothing: the reset offset (ListOffsets) cannot be read, the broker not
// knowing the topic any more. Txn.Rewind's contract: such partitions are
// returned gone (and their topic marked gone for the poll loop), not an
// error: an error stops the exactly-once Group, and Run with it, which is
// what reporting them gone is for. The client knew the topic before
// (kgo's metadata cache held it), as the consumer's does.
func TestRewindDeletedTopicWithoutCommittedOffsetIsGone(t *testing.T) {
	testRewindGone(t, "rewind-deleted-uncommitted", 2, deleteTopic, wantAllGone)
}

// As TestRewindDeletedTopicWithoutCommittedOffsetIsGone, with the
// protocol versions of Kafka 3.9 (OffsetFetch by topic name, below v10).
func TestRewindDeletedTopicWithoutCommittedOffsetIsGoneKafka39(t *testing.T) {
	testRewindGone(t, "rewind-deleted-uncommitted-39", 2, deleteTopic, wantAllGone, kafka39Protocol...)
}

// Rewind of partitions 0 to 2 of a topic recreated with one partition,
// the group having committed nothing: partitions 1 and 2 no longer exist
// (the broker does not know them), so they are returned gone and their
// topic marked, without an error; partition 0 is sought.
func TestRewindTopicRecreatedWithFewerPartitionsIsGone(t *testing.T) {
	testRewindGone(t, "rewind-recreated-fewer", 3, recreateWithOnePartition, wantAllButFirstGone)
}

// As TestRewindTopicRecreatedWithFewerPartitionsIsGone, with the protocol
// versions of Kafka 3.9 (OffsetFetch by topic name).
func TestRewindTopicRecreatedWithFewerPartitionsIsGoneKafka39(t *testing.T) {
	testRewindGone(t, "rewind-recreated-fewer-39", 3, recreateWithOnePartition, wantAllButFirstGone, kafka39Protocol...)
}

// testRewindGone rewinds the partitions of topic (of partitions
// partitions, on a new broker) once as rewoundTxn does, changes the topic
// with change, and rewinds them again: that Rewind must return no error
// (an error stops Run), report gone what want accepts, and mark the topic
// gone. The client made with opts.
func testRewindGone(t *testing.T, topic string, partitions int32, change topicChange, want goneCheck, opts ...kgo.Opt) {
	ctx, b, txn, r, tps := rewoundTxn(t, topic, partitions, opts...)
	what := change(ctx, t, b, topic)
	gone, err := txn.Rewind(ctx, tps)
	if err != nil {
		t.Fatalf("Rewind after %s = %v; want no error (an error stops Run)", what, err)
	}
	if ok, wanted := want(gone, tps); !ok || !r.gone[topic] {
		t.Fatalf("Rewind after %s: gone %v, topic marked %v; want %s and the topic marked", what, gone, r.gone[topic], wanted)
	}
}

// topicChange changes topic on b within ctx and names the change.
type topicChange func(ctx context.Context, t *testing.T, b *kafkatest.Broker, topic string) string

// deleteTopic is a topicChange deleting the topic.
func deleteTopic(ctx context.Context, t *testing.T, b *kafkatest.Broker, topic string) string {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := adm.DeleteTopics(ctx, topic); err != nil || resp.Error() != nil {
		t.Fatalf("deleting %s: %v %v", topic, err, resp.Error())
	}
	// Apache Kafka's broker applies the deletion a moment after
	// DeleteTopics returns: until then it still answers ListOffsets for
	// the topic, and a Rewind would find it.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		listed, err := adm.ListEndOffsets(ctx, topic)
		served := false
		listed.Each(func(o kadm.ListedOffset) { served = served || o.Err == nil })
		if !served && (err == nil || topicGoneErr(err)) {
			return "the topic's deletion"
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still served after its deletion: %v", topic, err)
		case <-tick.C:
		}
	}
}

// recreateWithOnePartition is a topicChange recreating the topic with one
// partition.
func recreateWithOnePartition(_ context.Context, t *testing.T, b *kafkatest.Broker, topic string) string {
	t.Helper()
	kafkadriver.RecreateTopic(t, b, topic, 1)
	return "the topic's recreation with 1 partition"
}

// goneCheck reports whether gone is what a Rewind of tps must report
// gone, and says what that is.
type goneCheck func(gone, tps []sluice.TopicPartition) (ok bool, want string)

// wantAllGone wants exactly tps gone, in order.
func wantAllGone(gone, tps []sluice.TopicPartition) (bool, string) {
	return slices.Equal(gone, tps), fmt.Sprintf("%v gone", tps)
}

// wantAllButFirstGone wants every partition of tps but the first among
// those gone.
func wantAllButFirstGone(gone, tps []sluice.TopicPartition) (bool, string) {
	ok := true
	for _, tp := range tps[1:] {
		ok = ok && slices.Contains(gone, tp)
	}
	return ok, fmt.Sprintf("%v gone", tps[1:])
}

// rewoundTxn creates topic with partitions partitions on a new broker and
// returns a context ending kafkadriver.RecreateWait from now (or when the
// test ends), the broker, a kgoTxn of group topic+"-g" (its runner's Txn; its
// client made with opts, resetting to the start as Source.Run's), the
// runner, and the topic's partitions, which the kgoTxn rewound once
// within that context, the topic existing: the client learns the topic
// (and its leaders) as the consumer's had. No partition may be reported
// gone.
func rewoundTxn(t *testing.T, topic string, partitions int32, opts ...kgo.Opt) (context.Context, *kafkatest.Broker, *kgoTxn, *runner, []sluice.TopicPartition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), kafkadriver.RecreateWait)
	t.Cleanup(cancel)
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, topic, partitions)
	opts = append(opts, kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())) // as Source.Run
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var tps []sluice.TopicPartition
	for p := range partitions {
		tps = append(tps, sluice.TopicPartition{Topic: topic, Partition: p})
	}
	r, _, stop := goneRunner(t)
	t.Cleanup(stop)
	txn := &kgoTxn{cl: cl, group: topic + "-g", rewound: make(map[sluice.TopicPartition]bool), core: r.core, gone: &r.gone}
	if gone, err := txn.Rewind(ctx, tps); err != nil || len(gone) != 0 {
		t.Fatalf("Rewind of the existing topic = %v, %v; want no partition gone, no error", gone, err)
	}
	return ctx, b, txn, r, tps
}
