package franz_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A pure-Go consumer that writes every order, upper-cased, to another
// topic: each input offset commits only after its output was
// acknowledged. (It takes a second or two: a consumer group forms on the
// embedded broker.)
func ExampleNewProducer() {
	testkit.RunExample("ExampleNewProducer", func(t *testing.T) {
		b, src := ordersOn(t, "shout", "shouted", "order 1", "order 2")
		p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
		if err != nil {
			t.Fatal(err)
		}
		shoutOrders(t, b, src, p)
		for _, rec := range b.ReadAll(t, "shouted") {
			fmt.Printf("%s\n", rec.Value)
		}
	})
	// Output:
	// ORDER 1
	// ORDER 2
}

// The dead-letter destination on kgo: the record the stage rejects lands,
// untouched, in the dead-letter topic with headers naming where it came
// from, and its offset commits once the dead letter is stored.
func ExampleProducer_DeadLetter() {
	testkit.RunExample("ExampleProducer_DeadLetter", func(t *testing.T) {
		b, src := ordersOn(t, "billing", "orders-dlq", "order 1", "garbage")
		dlq, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
		if err != nil {
			t.Fatal(err)
		}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if string(r.Value) == "garbage" {
					return sluice.Invalid(fmt.Errorf("cannot parse %q", r.Value))
				}
				return nil
			}, stages.Name("parse"))
		}
		runToEnd(t, b, src, "billing", build, pipeline.WithDeadLetter(dlq.DeadLetter("orders-dlq")))
		if err := dlq.Close(); err != nil {
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

// ordersOn returns an embedded broker whose topic "orders" holds orders,
// on its one partition, beside an empty topic out, and a franz source of
// group on "orders" that commits every 50ms (the examples wait for the
// commits).
func ordersOn(t *testing.T, group, out string, orders ...string) (*kafkatest.Broker, *franz.Source) {
	t.Helper()
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic(out, 1))
	for _, o := range orders {
		b.Produce(t, "orders", sluice.Record{Value: []byte(o)})
	}
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: group, Topics: []string{"orders"},
		CommitInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return b, src
}

// runToEnd runs build (with opts) on src until group committed "orders"
// on b to its end, then stops Run, failing t unless it returns nil.
func runToEnd(t *testing.T, b *kafkatest.Broker, src *franz.Source, group string, build pipeline.Builder, opts ...pipeline.Option) {
	t.Helper()
	end := int64(len(b.ReadAll(t, "orders")))
	r := testkit.Start(t, src, build, opts...)
	r.WaitUntil(t, "orders committed to its end", func() bool { return b.Committed(t, group, "orders")[0] == end })
	if err := r.Stop(t); err != nil {
		t.Fatal(err)
	}
}

// shoutOrders runs, on src until group "shout" committed "orders" on b
// to its end, a graph producing each order upper-cased (upperCase) to
// topic "shouted" with p, then closes p (after Run returned), failing t
// unless each returns nil.
func shoutOrders(t *testing.T, b *kafkatest.Broker, src *franz.Source, p *franz.Producer) {
	t.Helper()
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "shouted", upperCase)
	}
	runToEnd(t, b, src, "shout", build)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// upperCase is the message of the examples' output: the record's key and
// its value upper-cased.
func upperCase(r sluice.Record) (sluice.Message, error) {
	return sluice.Message{Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))}, nil
}
