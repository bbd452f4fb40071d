package source

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic deleted and recreated under the same name while the source
// consumes it (kafkadriver.TopicRecreated): the new topic first gets 2
// records (fewer than the old one's 5: the old position is out of
// range), then 5 more.
func TestTopicRecreated(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newRecreateSource(t, b), 2)
}

// As TestTopicRecreated, the new topic getting its 7 records at
// once: more than the old one had, so that the old topic's position (5)
// is a valid offset of the new one, which must not be where it is
// consumed from (records 0 to 4 would be lost). librdkafka keeps that
// position across the recreation; the source sees the new topic ID in
// librdkafka's log and starts the partition anew.
func TestTopicRecreatedLonger(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newRecreateSource(t, b), 7)
}

func newRecreateSource(t *testing.T, b *kafkatest.Broker) sluice.Source {
	return newSource(t, b, "g", "orders", nil)
}

// As TestTopicRecreatedLonger with the eager protocol (range): the
// source's seek must not disturb an assignment librdkafka replaces whole.
func TestTopicRecreatedLongerEager(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newSource(t, b, "g", "orders", map[string]any{"partition.assignment.strategy": "range"}), 7)
}

// As TestTopicRecreatedLonger with KIP-848 (group.protocol=consumer): the
// broker moves the partitions by topic ID, revoking the old topic's and
// assigning the new one's, which starts from the group's commit; the
// revoke must not commit the old topic's offsets onto the new topic.
func TestTopicRecreatedLongerKIP848(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newSource(t, b, "g", "orders", map[string]any{"group.protocol": "consumer"}), 7)
}

// A source consuming two topics, one of which is deleted
// (kafkadriver.TopicDeletedOtherTopic): once the topic is created again
// with one record, librdkafka's position (1) is the new topic's end, and
// the source must start it anew from its start.
func TestTopicDeletedOtherTopic(t *testing.T) {
	b := kafkatest.NewBroker(t)
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "stays"},
		CommitInterval: 50 * time.Millisecond, Logger: kafkatest.Logger(t)},
		Overrides: map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 6000}})
	if err != nil {
		t.Fatal(err)
	}
	kafkadriver.TopicDeletedOtherTopic(t, b, src)
}
