package franz_test

import (
	"testing"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// newProducer returns a producer on b, closed when the test ends (Close
// must return nil).
func newProducer(t *testing.T, b *kafkatest.Broker) *franz.Producer {
	t.Helper()
	return producertest.Open(t, func() (*franz.Producer, error) { return franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()}) })
}
