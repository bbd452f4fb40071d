package franz_test

import (
	"testing"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// newProducer returns a producer on b, closed when the test ends (Close
// must return nil).
func newProducer(t *testing.T, b *kafkatest.Broker) *franz.Producer {
	t.Helper()
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close after Run returned = %v, want nil", err)
		}
	})
	return p
}
