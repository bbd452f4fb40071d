package franz_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Exactly-once on kgo: the outputs and the input offsets commit in one
// transaction per commit interval, through the source's own client; a
// read_committed reader sees each output once. (It takes a second or
// two: a consumer group forms on the embedded broker.)
func ExampleNewTransactionalProducer() {
	runExample("ExampleNewTransactionalProducer", func(t *testing.T) {
		b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1), kafkatest.WithTopic("shouted", 1))
		b.Produce(t, "orders", sluice.Record{Value: []byte("order 1")}, sluice.Record{Value: []byte("order 2")})
		src, err := franz.NewSource(franz.Config{Brokers: b.Addrs(), Group: "shout", Topics: []string{"orders"},
			CommitInterval: 50 * time.Millisecond}) // commit quickly: the example waits for it
		if err != nil {
			t.Fatal(err)
		}
		p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
			TransactionalID: "shout-1", // unique per process, stable per instance
		})
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
