package franz_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// allInvalid is a builder whose one stage finds every record invalid.
func allInvalid(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		return r, sluice.Invalid(errors.New("bad record"))
	}, stages.Name("decode")))
}

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
