package franz

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// doneEnd ends a graph of the recreated topic tests: each record is done
// at once.
func doneEnd(in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Each(in, func(context.Context, sluice.Record) error { return nil })
}

// txnEnd returns the end of an exactly-once graph of the recreated topic
// tests: a transactional producer bound to src (created here, closed when
// the test ends, which must succeed) producing each record's value to
// topic out, created here on b.
func txnEnd(t *testing.T, b *kafkatest.Broker, src *Source) func(pipeline.Stream[sluice.Record]) pipeline.End {
	t.Helper()
	b.CreateTopic(t, "out", 1)
	p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "recreate-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Value: r.Value}, nil
		})
	}
}
