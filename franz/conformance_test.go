package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// newTestSource returns a franz source for group/topic with test timings
// (fast heartbeats and commits); opts are applied after them.
func newTestSource(t testing.TB, b *kafkatest.Broker, group, topic string, opts ...kgo.Opt) *Source {
	t.Helper()
	gc := producertest.SourceGroup(b.Addrs(), group, topic)
	gc.Logger = kafkatest.Logger(t)
	src, err := NewSource(Config{
		GroupConfig: gc,
		Opts:        append([]kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}, opts...),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// filledTopic returns a new broker with topic of partitions partitions,
// each holding perPart records of 100-byte values, and how many records
// the topic holds.
func filledTopic(t testing.TB, topic string, partitions int32, perPart int) (*kafkatest.Broker, int) {
	t.Helper()
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	return b, b.Fill(t, topic, perPart, 100)
}

// TestConformance runs testkit/sourcetest, whose scenarios assert the
// same exact commits for every source (the fake, the librdkafka source).
func TestConformance(t *testing.T) {
	b := kafkatest.NewBroker(t)
	sourcetest.Run(t, kafkadriver.Driver{Broker: b, Source: func(t *testing.T, group, topic string) sluice.Source {
		return newTestSource(t, b, group, topic)
	}})
}
