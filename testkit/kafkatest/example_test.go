package kafkatest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The embedded broker speaks the Kafka protocol: the real Kafka source
// consumes it and a dead-letter producer writes to it. The record the
// stage rejects lands, untouched, in the dead-letter topic with headers
// naming where it came from. (It takes a second or two: a consumer group
// forms on a real, if in-process, broker.)
func ExampleNewBroker() {
	testkit.RunExample("ExampleNewBroker", func(t *testing.T) {
		b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("orders-dlq", 1))
		b.Produce(t, "orders",
			sluice.Record{Value: []byte("order 1")},
			sluice.Record{Value: []byte("garbage")},
			sluice.Record{Value: []byte("order 3")})

		src, err := source.NewSource(source.Config{
			GroupConfig: sluice.GroupConfig{
				Brokers:        b.Addrs(),
				Group:          "billing",
				Topics:         []string{"orders"},
				CommitInterval: 50 * time.Millisecond, // commit quickly: the example waits for it
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		dlq, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs()})
		if err != nil {
			t.Fatal(err)
		}
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if string(r.Value) == "garbage" {
					return sluice.Invalid(fmt.Errorf("cannot parse %q", r.Value))
				}
				return nil
			}, stages.Name("parse"))
		}
		r := testkit.Start(t, src, build, pipeline.WithDeadLetter(dlq.DeadLetter("orders-dlq")))
		r.WaitUntil(t, "orders committed to its end", func() bool {
			return b.Committed(t, "billing", "orders")[0] == 3
		})
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		if err := dlq.Close(); err != nil { // after Run returned
			t.Fatal(err)
		}
		for _, rec := range b.ReadAll(t, "orders-dlq") {
			fmt.Printf("%q\n", rec.Value)
			for _, h := range rec.Headers {
				fmt.Printf("  %s: %s\n", h.Key, h.Value)
			}
		}
	})
	// Output:
	// "garbage"
	//   sluice.dlq.topic: orders
	//   sluice.dlq.partition: 0
	//   sluice.dlq.offset: 1
	//   sluice.dlq.error: cannot parse "garbage"
	//   sluice.dlq.stage: parse
}
