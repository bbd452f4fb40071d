package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// newBuild is a program's builder, given the producer to write to: the
// program passes its Kafka producer (confluent.NewProducer or
// franz.NewProducer), its tests a testkit.Producer. The graph is the same
// in both.
func newBuild(alerts sink.Producer) pipeline.Builder {
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		amounts := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) { return string(r.Value), nil })
		large := stages.Filter(amounts, func(a string) bool { return len(a) > 3 })
		return sink.Produce(large, alerts, "alerts", alertMessage, stages.Name("alert"))
	}
}

func alertMessage(amount string) (sluice.Message, error) {
	return sluice.Message{Value: []byte("large order: " + amount)}, nil
}

// A graph ending in a Kafka producer, tested without a broker: the
// builder's sink.Produce sends to a Producer that records every message,
// and each record commits once its message was delivered.
func ExampleProducer() {
	testkit.RunExample("ExampleProducer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			alerts := testkit.NewProducer()
			h := testkit.New(t, newBuild(alerts))
			h.Assign("orders", 0)
			h.Send("orders", 0, []byte("12"), []byte("90000"), []byte("7"), []byte("4500"))
			h.WaitCommitted("orders", 0, 4)
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
			fmt.Println(strings.Join(alerts.Values("alerts"), "\n"))
		})
	})
	// Output:
	// large order: 90000
	// large order: 4500
}

// DeadLetter records the dead letters as the Kafka producers write them:
// the record untouched, plus the sluice.dlq.* headers.
func ExampleProducer_DeadLetter() {
	testkit.RunExample("ExampleProducer_DeadLetter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			prod := testkit.NewProducer()
			h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return sink.Produce(in, prod, "out", func(r sluice.Record) (sluice.Message, error) {
					if string(r.Value) == "bad" {
						return sluice.Message{}, sluice.Invalid(errors.New("not an order"))
					}
					return sluice.Message{Value: r.Value}, nil
				}, stages.Name("encode"))
			}, pipeline.WithDeadLetter(prod.DeadLetter("orders-dlq")))
			h.Assign("orders", 0)
			h.Send("orders", 0, []byte("a"), []byte("bad"), []byte("c"))
			h.WaitCommitted("orders", 0, 3)
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
			fmt.Println(prod.Values("out"), prod.Values("orders-dlq"))
			for _, m := range prod.Messages() {
				if m.Topic == "orders-dlq" {
					for _, hd := range m.Message.Headers {
						fmt.Printf("%s=%s\n", hd.Key, hd.Value)
					}
				}
			}
		})
	})
	// Output:
	// [a c] [bad]
	// sluice.dlq.topic=orders
	// sluice.dlq.partition=0
	// sluice.dlq.offset=1
	// sluice.dlq.error=not an order
	// sluice.dlq.stage=encode
}

// FailWith makes deliveries fail, as a broker that stays unreachable
// does: Run stops at the record whose message failed, which is not
// committed. As with a real producer, which keeps many messages in
// flight, the messages after it may have been produced already.
func ExampleProducer_FailWith() {
	testkit.RunExample("ExampleProducer_FailWith", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			alerts := testkit.NewProducer()
			alerts.FailWith(func(m testkit.Produced) error {
				if strings.HasSuffix(string(m.Message.Value), "4500") {
					return errors.New("broker unreachable")
				}
				return nil
			})
			h := testkit.New(t, newBuild(alerts))
			h.Assign("orders", 0)
			h.Send("orders", 0, []byte("90000"), []byte("4500"), []byte("80000"))
			fmt.Println("Run:", h.Wait())
			fmt.Println("committed:", h.Committed("orders", 0), "produced:", alerts.Len(), "sent:", alerts.Calls())
		})
	})
	// Output:
	// Run: sluice: stage "alert" on orders/0 at offset 1: delivery to alerts failed: broker unreachable
	// committed: 1 produced: 2 sent: 3
}

// SendMessages gives the test's records keys and headers.
func ExampleHarness_SendMessages() {
	testkit.RunExample("ExampleHarness_SendMessages", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, func(_ context.Context, r sluice.Record) error {
					fmt.Printf("%s=%s at %d, headers %d\n", r.Key, r.Value, r.Offset, len(r.Headers))
					return nil
				})
			})
			h.Assign("orders", 0)
			h.SendMessages("orders", 0,
				sluice.Message{Key: []byte("alice"), Value: []byte("12"), Headers: []sluice.Header{{Key: "trace-id", Value: []byte("t1")}}},
				sluice.Message{Key: []byte("bob"), Value: []byte("7")})
			h.WaitCommitted("orders", 0, 2)
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
		})
	})
	// Output:
	// alice=12 at 0, headers 1
	// bob=7 at 1, headers 0
}
