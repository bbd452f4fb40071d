package confluent_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A consume-transform-produce pipeline exactly once: the outputs and the
// input offsets commit in one transaction per commit interval, and a
// read_committed reader of "receipts" sees each order's receipt once.
func ExampleNewTransactionalProducer() {
	b, err := kafkatest.StartBroker(kafkatest.WithTopic("orders", 2), kafkatest.WithTopic("receipts", 2), kafkatest.WithTopic("orders-dlq", 1))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for i := range 6 {
		rec := sluice.Record{Partition: int32(i % 2), Key: fmt.Appendf(nil, "order-%d", i), Value: []byte("10.00")}
		if err := b.ProduceContext(ctx, "orders", rec); err != nil {
			log.Fatal(err)
		}
	}

	src, err := source.NewSource(source.Config{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	prod, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:  confluent.ProducerConfig{Brokers: b.Addrs()},
		TransactionalID: "billing-instance-1", // unique per process, stable across its restarts
	})
	if err != nil {
		log.Fatal(err)
	}
	defer prod.Close() // after Run returned
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		receipts := stages.Map(in, func(_ context.Context, r sluice.Record) (sink.Message, error) {
			return sink.Message{Key: r.Key, Value: append([]byte("paid "), r.Value...)}, nil
		})
		return sink.Produce(receipts, prod, "receipts", func(m sink.Message) (sink.Message, error) { return m, nil })
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(runCtx, src, build, pipeline.WithDeadLetter(prod.DeadLetter("orders-dlq")))
	}()
	want := map[int32]int64{0: 3, 1: 3}
	for !maps.Equal(committed(b, "billing", "orders"), want) {
		time.Sleep(10 * time.Millisecond) // a transaction commits every 100ms
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed offsets:", committed(b, "billing", "orders"))
	// Output:
	// committed offsets: map[0:3 1:3]
}

func committed(b *kafkatest.Broker, group, topic string) map[int32]int64 {
	out, err := b.CommittedContext(context.Background(), group, topic)
	if err != nil {
		log.Fatal(err)
	}
	return out
}
