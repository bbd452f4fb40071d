package source_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The scenarios below recreate topic "orders" (group "g") in shapes the
// basic scenario (kafkadriver.TopicRecreated) leaves out: another
// partition count, two recreations in a row, a record of the old topic
// still in flight, and exactly-once. Each wants every record of the new
// topic delivered exactly once from its start, and the group's commit of
// the new topic exactly what was processed of it.

// As TestTopicRecreatedLonger, exactly-once: a transactional producer is
// bound to the source, so each commit is a transaction (with no output:
// the offsets are committed plainly after the empty transaction).
func TestExactlyOnceTopicRecreatedLonger(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src := shapeSource(t, b, nil)
	p, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:    confluent.ProducerConfig{Brokers: b.Addrs()},
		TransactionConfig: sink.TransactionConfig{TransactionalID: "recreate-eos-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	kafkadriver.TopicRecreated(t, b, src, 7)
}

// A topic of 2 partitions recreated with 1, which gets more records than
// the old partition 0 had.
func TestTopicRecreatedWithFewerPartitions(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 2, 1, 1, map[int32]int{0: 7})
}

// A topic of 1 partition recreated with 3, partition 0 getting more
// records than the old one had.
func TestTopicRecreatedWithMorePartitions(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 1, 3, 1, map[int32]int{0: 7, 1: 2, 2: 1})
}

// A topic deleted and recreated twice in a row before any record of the
// new topic is produced.
func TestTopicRecreatedTwice(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, nil), 1, 1, 2, map[int32]int{0: 7})
}

// As TestTopicRecreatedWithMorePartitions with KIP-848.
func TestTopicRecreatedWithMorePartitionsKIP848(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateShape(t, b, shapeSource(t, b, map[string]any{"group.protocol": "consumer"}), 1, 3, 1, map[int32]int{0: 7, 1: 2, 2: 1})
}

// shapeSource returns a source of topic orders in group g on b with
// librdkafka's overrides (newSource).
func shapeSource(t *testing.T, b *kafkatest.Broker, overrides map[string]any) *source.Source {
	t.Helper()
	return source.NewTestSource(t, b, "g", "orders", overrides)
}

// recreateShape consumes 5 records of each of oldParts partitions of
// "orders", waits for their commit, recreates the topic times times (the
// last with newParts partitions), produces want[p] records to each
// partition p of the new topic and wants each delivered once, then the
// group's commit of the new topic exactly want.
func recreateShape(t *testing.T, b *kafkatest.Broker, src sluice.Source, oldParts, newParts int32, times int, want map[int32]int) {
	t.Helper()
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, oldParts)
	oldWant := map[string]bool{}
	oldCommit := map[int32]int64{}
	var old []sluice.Record
	for p := range oldParts {
		for i := range 5 {
			old = append(old, sluice.Record{Partition: p, Value: fmt.Appendf(nil, "old-%d-%d", p, i)})
			oldWant[fmt.Sprintf("old-%d-%d@%d/%d", p, i, p, i)] = true
		}
		oldCommit[p] = 5
	}
	b.Produce(t, topic, old...)

	r := kafkadriver.StartRun(t, src, kafkadriver.RunOptions{
		Key: func(rec sluice.Record) string {
			return fmt.Sprintf("%s@%d/%d", rec.Value, rec.Partition, rec.Offset)
		},
		// A record of the new topic comes once, and only when awaited.
		Once: func(v string) bool { return strings.HasPrefix(v, "new-") },
	})
	r.Await(oldWant)
	b.WaitCommitted(t, group, topic, oldCommit)

	for i := range times {
		parts := oldParts
		if i == times-1 {
			parts = newParts
		}
		kafkadriver.RecreateTopic(t, b, topic, parts)
	}
	produce := kafkadriver.NewProducer(t, b, topic)
	newWant := map[string]bool{}
	wantCommit := map[int32]int64{}
	for p, n := range want {
		for i := range n {
			produce(p, fmt.Sprintf("new-%d-%d", p, i))
			newWant[fmt.Sprintf("new-%d-%d@%d/%d", p, i, p, i)] = true
		}
		wantCommit[p] = int64(n)
	}
	r.Await(newWant)
	r.Stop()
	if got := b.Committed(t, group, topic); !maps.Equal(got, wantCommit) {
		t.Fatalf("committed offsets of %s = %v, want %v", topic, got, wantCommit)
	}
}
