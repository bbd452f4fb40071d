package confluent_test

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

const wait = 60 * time.Second

// newProducer returns a producer on b with overrides, closed when the test
// ends (Close must return nil: producertest.Open).
func newProducer(t *testing.T, b *kafkatest.Broker, overrides map[string]any) *confluent.Producer {
	t.Helper()
	return producertest.Open(t, func() (*confluent.Producer, error) {
		return confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs(), Overrides: overrides})
	})
}

// outProducer returns a new broker with topic "out" of one partition, and
// a producer on it (newProducer, without overrides).
func outProducer(t *testing.T) (*kafkatest.Broker, *confluent.Producer) {
	t.Helper()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "out", 1)
	return b, newProducer(t, b, nil)
}

// newSource returns a librdkafka source of group on topic with fast
// commits and heartbeats.
func newSource(t testing.TB, brokers []string, group, topic string) *source.Source {
	t.Helper()
	src, err := source.NewSource(source.Config{
		GroupConfig: producertest.SourceGroup(brokers, group, topic),
		Overrides:   map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 6000},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// start runs the pipeline in the background until the test ends.
func start(t *testing.T, src sluice.Source, build pipeline.Builder, opts ...pipeline.Option) *testkit.Running {
	t.Helper()
	return testkit.Start(t, src, build, opts...)
}

// The records, messages and waits of the producer conformance suite.
var (
	input         = producertest.Input
	toMsg         = producertest.ToMessage
	stop          = producertest.Stop
	waitCommitted = producertest.WaitCommitted
)
