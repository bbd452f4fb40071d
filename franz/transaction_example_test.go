package franz_test

import (
	"fmt"
	"testing"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/testkit"
)

// Exactly-once on kgo: the outputs and the input offsets commit in one
// transaction per commit interval, through the source's own client; a
// read_committed reader sees each output once. (It takes a second or
// two: a consumer group forms on the embedded broker.)
func ExampleNewTransactionalProducer() {
	testkit.RunExample("ExampleNewTransactionalProducer", func(t *testing.T) {
		b, src := ordersOn(t, "shout", "shouted", "order 1", "order 2")
		p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
			TransactionConfig: sink.TransactionConfig{TransactionalID: "shout-1"}, // unique per process, stable per instance
		})
		if err != nil {
			t.Fatal(err)
		}
		shoutOrders(t, b, src, p)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("shouted"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for n := 0; n < 2; {
			cl.PollFetches(t.Context()).EachRecord(func(rec *kgo.Record) {
				fmt.Printf("%s\n", rec.Value)
				n++
			})
		}
	})
	// Output:
	// ORDER 1
	// ORDER 2
}
