package sink_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A producer created inside the builder (one Kafka client per partition
// and per reassignment, never closed) fails the first build with a
// *pipeline.BuildError naming the mistake, before any client leaks into a
// running graph.
func TestProducerCreatedInTheBuilderFailsTheBuild(t *testing.T) {
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "out", 1)
	var mu sync.Mutex
	var made []*sink.Producer
	t.Cleanup(func() {
		for _, p := range made {
			_ = p.Close()
		}
	})
	fake := testkit.NewFake()
	r := testkit.Start(t, fake, func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		p, err := sink.NewProducer(sink.ProducerConfig{Brokers: b.Addrs()}) // wrong: one per partition
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		made = append(made, p)
		mu.Unlock()
		return sink.Produce(in, p, "out", func(r pipeline.Record) (sink.Message, error) { return sink.Message{Value: r.Value}, nil })
	})
	if err := fake.Assign("in", 0); err == nil {
		t.Fatal("Assign succeeded; want the build to fail")
	}
	err := r.Wait(t)
	var be *pipeline.BuildError
	if !errors.As(err, &be) || be.Partition != 0 || !strings.Contains(err.Error(), `"Produce#1"`) ||
		!strings.Contains(err.Error(), "created inside the builder") || !strings.Contains(err.Error(), "before pipeline.Run") {
		t.Fatalf("Run = %v, want a BuildError for in/0 naming Produce#1, the producer created inside the builder and the fix", err)
	}
}
