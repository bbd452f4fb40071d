package confluent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A transactional producer is bound before its source's Run ("Call it
// before src's Run ... use the producer for that Run only"): binding one
// to a source whose Run has already been called (and here returned) is
// refused, as franz.NewTransactionalProducer refuses it. Accepted, the
// producer is bound to a source that never runs again: it can never
// begin a transaction, and the caller learns it only at its first produce.
func TestNewTransactionalProducerAfterRunIsRefused(t *testing.T) {
	b := kafkatest.NewKfake(t)
	src := newSource(t, b.Addrs(), "g", "no-such-topic")
	err := pipeline.Run(context.Background(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		t.Error("the builder ran")
		return stages.Discard(in)
	})
	if !errors.Is(err, sluice.ErrMissingTopic) {
		t.Fatalf("Run = %v, want the missing-topic error", err)
	}
	p, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:    confluent.ProducerConfig{Brokers: b.Addrs()},
		TransactionConfig: sink.TransactionConfig{TransactionalID: "after-run"},
	})
	if err == nil {
		_ = p.Close()
		t.Fatal("NewTransactionalProducer after the source's Run returned no error: the producer is bound to a source whose Run is over")
	}
}
