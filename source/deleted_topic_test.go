package source

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

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
