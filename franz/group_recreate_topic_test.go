package franz

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
func TestSourceTopicRecreated(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newRecreateSource(t, b), 2)
}

// As TestSourceTopicRecreated, the new topic getting its 7 records at
// once: more than the old one had, so that the old topic's position (5)
// is a valid offset of the new one, which must not be where it is
// consumed from (records 0 to 4 would be lost).
func TestSourceTopicRecreatedLonger(t *testing.T) {
	b := kafkatest.NewBroker(t)
	kafkadriver.TopicRecreated(t, b, newRecreateSource(t, b), 7)
}

func newRecreateSource(t *testing.T, b *kafkatest.Broker) sluice.Source {
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
