package sink_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
)

// shout is a program's builder: every record, upper-cased, to "shouted"
// with prod. It takes a sink.Producer, so the program chooses the client
// where it creates the producer (confluent.NewProducer,
// franz.NewProducer) and nowhere else; here, testkit's fake.
func shout(prod sink.Producer) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, prod, "shouted", func(r sluice.Record) (sink.Message, error) {
			return sink.Message{Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))}, nil
		})
	}
}

// One Produce stage for every client: the graph ends in sink.Produce with
// whichever sink.Producer it is given, and each input offset commits only
// after its output was delivered.
func ExampleProduce() {
	testkit.RunExample("ExampleProduce", func(t *testing.T) {
		prod := testkit.NewProducer() // confluent.NewProducer(...) or franz.NewProducer(...) in a program
		fake := testkit.NewFake()
		r := testkit.Start(t, fake, shout(prod), pipeline.WithDeadLetter(prod.DeadLetter("orders-dlq")))
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		if err := fake.Send("orders", 0, []byte("order 1"), []byte("order 2")); err != nil {
			t.Fatal(err)
		}
		fake.WaitCommitted(t, "orders", 0, 2)
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		if err := prod.Close(); err != nil { // after Run returned
			t.Fatal(err)
		}
		fmt.Println(prod.Values("shouted"))
	})
	// Output:
	// [ORDER 1 ORDER 2]
}
