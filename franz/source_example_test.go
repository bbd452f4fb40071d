package franz_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A consumer group source in pure Go: the same pipeline as on
// source.NewSource, with kgo underneath. Each record's offset commits once
// its stage returned. (It takes a second or two: a consumer group forms on
// the embedded broker.)
func ExampleNewSource() {
	testkit.RunExample("ExampleNewSource", func(t *testing.T) {
		b := kafkatest.NewBroker(t, kafkatest.WithTopic("orders", 1))
		b.Produce(t, "orders", sluice.Record{Value: []byte("order 1")}, sluice.Record{Value: []byte("order 2")})
		src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
			CommitInterval: 50 * time.Millisecond}}) // commit quickly: the example waits for it
		if err != nil {
			t.Fatal(err)
		}
		seen := make(chan string, 2)
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				seen <- fmt.Sprintf("%s@%d: %s", r.Topic, r.Offset, r.Value)
				return nil
			})
		}
		r := testkit.Start(t, src, build)
		r.WaitUntil(t, "orders committed to its end", func() bool { return b.Committed(t, "billing", "orders")[0] == 2 })
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
		close(seen)
		for s := range seen {
			fmt.Println(s)
		}
		fmt.Println("committed:", b.Committed(t, "billing", "orders")[0])
	})
	// Output:
	// orders@0: order 1
	// orders@1: order 2
	// committed: 2
}
