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
	var orders []sluice.Record
	for i := range 6 {
		orders = append(orders, sluice.Record{Partition: int32(i % 2), Key: fmt.Appendf(nil, "order-%d", i), Value: []byte("10.00")})
	}
	b := startBroker(orders, kafkatest.WithTopic("orders", 2), kafkatest.WithTopic("receipts", 2), kafkatest.WithTopic("orders-dlq", 1))
	defer b.Close()

	src, err := source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	prod, err := confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{
		ProducerConfig:    confluent.ProducerConfig{Brokers: b.Addrs()},
		TransactionConfig: sink.TransactionConfig{TransactionalID: "billing-instance-1"}, // unique per process, stable across its restarts
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

	runUntilCommitted(src, build, b, "billing", map[int32]int64{0: 3, 1: 3}, pipeline.WithDeadLetter(prod.DeadLetter("orders-dlq")))
	fmt.Println("committed offsets:", committed(b, "billing", "orders"))
	// Output:
	// committed offsets: map[0:3 1:3]
}

// startBroker starts an embedded broker with topics and produces orders to
// its topic "orders"; the caller closes it.
func startBroker(orders []sluice.Record, topics ...kafkatest.BrokerOption) *kafkatest.Broker {
	b, err := kafkatest.StartBroker(topics...)
	if err != nil {
		log.Fatal(err)
	}
	if err := b.ProduceContext(context.Background(), "orders", orders...); err != nil {
		log.Fatal(err)
	}
	return b
}

// runUntilCommitted runs build (with opts) on src until group's commits of
// "orders" on b are want, then cancels Run's context, as a program shuts
// down, and returns once Run returned nil. It exits on Run's error, or
// when the commits are not there within a minute.
func runUntilCommitted(src sluice.Source, build pipeline.Builder, b *kafkatest.Broker, group string, want map[int32]int64, opts ...pipeline.Option) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build, opts...) }()
	deadline := time.Now().Add(time.Minute)
	for !maps.Equal(committed(b, group, "orders"), want) {
		if time.Now().After(deadline) {
			log.Fatalf("%s committed %v of orders after a minute, want %v", group, committed(b, group, "orders"), want)
		}
		time.Sleep(10 * time.Millisecond) // the source commits every 50 to 100ms
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
}

// committed returns group's commits of topic on b.
func committed(b *kafkatest.Broker, group, topic string) map[int32]int64 {
	out, err := b.CommittedContext(context.Background(), group, topic)
	if err != nil {
		log.Fatal(err)
	}
	return out
}
