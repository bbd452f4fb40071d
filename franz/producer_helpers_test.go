package franz_test

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
)

const wait = 60 * time.Second

// newSource returns a franz source of group on topic with fast commits
// and heartbeats.
func newSource(t testing.TB, brokers []string, group, topic string) *franz.Source {
	t.Helper()
	src, err := franz.NewSource(franz.Config{GroupConfig: producertest.SourceGroup(brokers, group, topic), Opts: fastHeartbeats})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// fastHeartbeats are the client options of the tests' sources:
// heartbeats fast enough for tests.
var fastHeartbeats = []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}

// newProducer returns a producer on b, closed when the test ends (Close
// must return nil).
func newProducer(t *testing.T, b *kafkatest.Broker) *franz.Producer {
	t.Helper()
	return producertest.Open(t, func() (*franz.Producer, error) { return franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()}) })
}

// The records, messages and waits of the producer conformance suite.
var (
	input         = producertest.Input
	toMsg         = producertest.ToMessage
	stop          = producertest.Stop
	waitCommitted = producertest.WaitCommitted
)

// produceTo is a builder producing every record to topic with p.
func produceTo(p *franz.Producer, topic string) pipeline.Builder {
	return func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(s, p, topic, toMsg)
	}
}
