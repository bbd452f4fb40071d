package franz_test

import (
	"context"
	"flag"
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
	runExample("ExampleNewProducer", func(t *testing.T) {
		b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("shouted", 1))
		b.Produce(t, "orders", sluice.Record{Value: []byte("order 1")}, sluice.Record{Value: []byte("order 2")})
		src, err := franz.NewSource(franz.Config{Brokers: b.Addrs(), Group: "shout", Topics: []string{"orders"},
			CommitInterval: 50 * time.Millisecond}) // commit quickly: the example waits for it
		if err != nil {
			t.Fatal(err)
		}
		p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
		if err != nil {
			t.Fatal(err)
		}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, p, "shouted", func(r sluice.Record) (sluice.Message, error) {
				return sluice.Message{Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))}, nil
			})
		}
		r := testkit.Start(t, src, build)
		r.WaitUntil(t, "orders committed to its end", func() bool { return b.Committed(t, "shout", "orders")[0] == 2 })
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil { // after Run returned
			t.Fatal(err)
		}
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
	runExample("ExampleProducer_DeadLetter", func(t *testing.T) {
		b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("orders-dlq", 1))
		b.Produce(t, "orders", sluice.Record{Value: []byte("order 1")}, sluice.Record{Value: []byte("garbage")})
		src, err := franz.NewSource(franz.Config{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
			CommitInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
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
		r := testkit.Start(t, src, build, pipeline.WithDeadLetter(dlq.DeadLetter("orders-dlq")))
		r.WaitUntil(t, "orders committed to its end", func() bool { return b.Committed(t, "billing", "orders")[0] == 2 })
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
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

// runExample runs fn with a *testing.T, the way go test runs a test named
// name, so that an Example can use the helpers that take a testing.TB
// (testkit/kafkatest's example explains it); -v is off and -count 1 while
// it runs, so fn's progress lines do not mix with the Example's output.
func runExample(name string, fn func(t *testing.T)) {
	for flagName, value := range map[string]string{"test.v": "false", "test.count": "1"} {
		if f := flag.Lookup(flagName); f != nil {
			old := f.Value.String()
			_ = f.Value.Set(value)
			defer func() { _ = f.Value.Set(old) }()
		}
	}
	testing.RunTests(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: name, F: fn}})
}
