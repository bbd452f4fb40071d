package franz_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// allInvalid is a builder whose one stage finds every record invalid.
func allInvalid(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, func(_ context.Context, r pipeline.Record) (pipeline.Record, error) {
		return r, pipeline.Invalid(errors.New("bad record"))
	}, stages.Name("decode")))
}

// deadLetterOffsets returns, for each source partition, the offsets named
// by the dead letters in recs, in their order.
func deadLetterOffsets(t *testing.T, recs []pipeline.Record) map[int32][]int64 {
	t.Helper()
	out := map[int32][]int64{}
	for _, r := range recs {
		var part, off string
		for _, h := range r.Headers {
			switch h.Key {
			case pipeline.DeadLetterHeaderPartition:
				part = string(h.Value)
			case pipeline.DeadLetterHeaderOffset:
				off = string(h.Value)
			}
		}
		p, err1 := strconv.Atoi(part)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("dead letter %d without its origin: %v", r.Offset, err)
		}
		out[int32(p)] = append(out[int32(p)], o)
	}
	return out
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
