package confluent_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A librdkafka consumer that writes every order, upper-cased, to another
// topic: the producer is a sink.Producer, so the graph ends in
// sink.Produce (as with franz.NewProducer), and each input offset commits
// only after its output was delivered.
func ExampleNewProducer() {
	b := startBroker([]sluice.Record{{Value: []byte("order 1")}, {Value: []byte("order 2")}},
		kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("shouted", 1), kafkatest.WithTopic("orders-dlq", 1))
	defer b.Close()
	src, err := source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "shout", Topics: []string{"orders"},
		CommitInterval: 50 * time.Millisecond}}) // commit quickly: the example waits for it
	if err != nil {
		log.Fatal(err)
	}
	prod, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		log.Fatal(err)
	}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, prod, "shouted", func(r sluice.Record) (sink.Message, error) {
			return sink.Message{Value: []byte(strings.ToUpper(string(r.Value)))}, nil
		})
	}
	runUntilCommitted(src, build, b, "shout", map[int32]int64{0: 2}, pipeline.WithDeadLetter(prod.DeadLetter("orders-dlq")))
	if err := prod.Close(); err != nil { // after Run returned
		log.Fatal(err)
	}
	recs, err := b.ReadAllContext(context.Background(), "shouted")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Printf("%s\n", r.Value)
	}
	// Output:
	// ORDER 1
	// ORDER 2
}
