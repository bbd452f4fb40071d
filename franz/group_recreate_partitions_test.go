package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic recreated with more partitions than before: every record of
// every partition of the new topic is delivered from its start, and the
// commits are exactly what was processed.
func TestSourceTopicRecreatedMorePartitions(t *testing.T) {
	testRecreatedPartitions(t, 1, 3, "classic")
}

// As TestSourceTopicRecreatedMorePartitions, with fewer partitions: the
// partitions that no longer exist leave nothing behind.
func TestSourceTopicRecreatedFewerPartitions(t *testing.T) {
	testRecreatedPartitions(t, 3, 1, "classic")
}

// As TestSourceTopicRecreatedMorePartitions, in a KIP-848 group (the
// consumer group protocol, server-side assignment).
func TestSourceTopicRecreatedMorePartitions848(t *testing.T) {
	testRecreatedPartitions(t, 1, 3, "consumer", kip848Group...)
}

// As TestSourceTopicRecreatedLonger, in a KIP-848 group.
func TestSourceTopicRecreatedLonger848(t *testing.T) { topicRecreated(t, 7, kip848Group...) }

// As TestSourceTopicRecreatedRecordInFlight, in a KIP-848 group.
func TestSourceTopicRecreatedRecordInFlight848(t *testing.T) {
	recordInFlight(t, doneEnd, kip848Group...)
}

// testRecreatedPartitions consumes 2 records of each of the oldN
// partitions of topic orders, recreates it with newN partitions, produces
// 3 records to each and checks each is delivered once and committed, and
// that the group is of groupType (as the broker names it) meanwhile, on a
// new broker with a source whose client is made with opts.
func testRecreatedPartitions(t *testing.T, oldN, newN int32, groupType string, opts ...kgo.Opt) {
	b := kafkatest.NewBroker(t)
	src := newRecreateSource(t, b, opts...)
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, oldN)
	produceTo(t, b, topic, oldN, 2, "old")

	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			seen <- fmt.Sprintf("%s@%d/%d", r.Value, r.Partition, r.Offset)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()

	deadline := time.After(2 * kafkadriver.RecreateWait)
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-seen:
				if !want[v] && v[:4] == "new-" {
					t.Errorf("unexpected record %s", v)
				}
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered in time", want)
			}
		}
	}
	await(wantRecords(oldN, 2, "old"))
	waitCommittedAll(t, b, group, topic, oldN, 2)

	kafkadriver.RecreateTopic(t, b, topic, newN)
	produceTo(t, b, topic, newN, 3, "new")
	await(wantRecords(newN, 3, "new"))
	waitCommittedAll(t, b, group, topic, newN, 3)
	gctx, gcancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer gcancel()
	if g, err := b.GroupContext(gctx, group); err != nil || g.Type != groupType {
		t.Errorf("group %s is %+v (%v), want type %q", group, g, err, groupType)
	}
	stopRun(t, cancel, done)
	got := b.Committed(t, group, topic)
	if len(got) != int(newN) {
		t.Errorf("committed offsets of %s = %v, want %d partitions at 3", topic, got, newN)
	}
	for p := range newN {
		if got[p] != 3 {
			t.Errorf("committed offsets of %s = %v, want %d partitions at 3", topic, got, newN)
		}
	}
}

func wantRecords(n int32, per int, prefix string) map[string]bool {
	want := map[string]bool{}
	for p := range n {
		for i := range per {
			want[fmt.Sprintf("%s-%d-%d@%d/%d", prefix, p, i, p, i)] = true
		}
	}
	return want
}

// produceTo produces per records to each of the n partitions of topic,
// with a new client (one that never saw an older topic of that name).
func produceTo(t *testing.T, b *kafkatest.Broker, topic string, n int32, per int, prefix string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	for p := range n {
		for i := range per {
			r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", prefix, p, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// waitCommittedAll waits until the group's committed offsets of topic are
// want for each of its n partitions (and no other).
func waitCommittedAll(t *testing.T, b *kafkatest.Broker, group, topic string, n int32, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	for {
		got, err := b.CommittedContext(ctx, group, topic)
		ok := err == nil && len(got) == int(n)
		for p := range n {
			ok = ok && got[p] == want
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("committed offsets of %s = %v (%v), want %d partitions at %d", topic, got, err, n, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// As TestTransactionalSourceTopicRecreatedRecordInFlight, in a KIP-848
// group. On Apache Kafka the transaction's offsets of the old topic ID are
// refused, the transaction aborts, and the rewind finds the topic gone
// (UNKNOWN_TOPIC_ID): the partition is lost and the new topic consumed
// from its start.
func TestTransactionalSourceTopicRecreatedRecordInFlight848(t *testing.T) {
	recordInFlight(t, txnEnd, kip848Group...)
}
