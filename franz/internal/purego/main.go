// Command purego is a consumer built from pipeline, stages, franz, metrics
// and the testkit fake only: CI builds it with CGO_ENABLED=0 to prove that
// a program on the franz source and producer needs no C compiler (.ci/run,
// "pure Go"). Run, it processes three records through the fake source,
// then produces them with sink.Produce on the franz producer (its dead-letter destination
// wired) to a cluster that is not there, checks that the first delivery's
// timeout stops Run at its offset, and exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func build(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	upper := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) {
		return strings.ToUpper(string(r.Value)), nil
	})
	return stages.Each(upper, func(_ context.Context, s string) error {
		fmt.Println(s)
		return nil
	})
}

// produceBuilder writes every value to topic "out" with p (the pure-Go
// producer) and marks "b" invalid (for the dead-letter destination).
func produceBuilder(p *franz.Producer) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) {
			if string(r.Value) == "b" {
				return sluice.Message{}, sluice.Invalid(errors.New("b is bad"))
			}
			return sluice.Message{Key: r.Key, Value: r.Value}, nil
		})
	}
}

func main() {
	// The franz source is what a deployment would run; built, not started.
	if _, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"localhost:9092"}, Group: "purego", Topics: []string{"in"}}}); err != nil {
		log.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		log.Fatal(err)
	}
	fake := testkit.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, fake, build, pipeline.WithHooks(m)) }()
	if err := fake.Assign("in", 0); err != nil {
		log.Fatal(err)
	}
	if err := fake.Send("in", 0, []byte("a"), []byte("b"), []byte("c")); err != nil {
		log.Fatal(err)
	}
	for {
		changed := fake.Changed() // before reading, so no commit is missed
		if fake.Committed("in", 0) >= 3 {
			break
		}
		<-changed
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	produceNowhere()
}

// produceNowhere runs sink.Produce on the franz producer, with its dead-letter
// destination wired, against a cluster that is not there: the first
// value's delivery times out, which stops Run with a StageError at its
// offset; Close then has nothing left to give up on.
func produceNowhere() {
	// SkipTopicCheck: the topics cannot be checked without a cluster
	// (each check would wait 10s for one).
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: []string{"127.0.0.1:1"}, DeliveryTimeout: 200 * time.Millisecond, SkipTopicCheck: true})
	if err != nil {
		log.Fatal(err)
	}
	fake := testkit.NewFake()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(context.Background(), fake, produceBuilder(p), pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	}()
	if err := fake.Assign("in", 0); err != nil {
		log.Fatal(err)
	}
	if err := fake.Send("in", 0, []byte("a"), []byte("b"), []byte("c")); err != nil {
		log.Fatal(err)
	}
	var se *sluice.StageError
	if err := <-done; !errors.As(err, &se) || se.Offset != 0 || !strings.Contains(err.Error(), "delivery to out failed") {
		log.Fatalf("Run = %v, want a StageError at offset 0 naming the delivery to out", err)
	}
	if err := p.Close(); err != nil {
		log.Fatalf("Close after Run = %v, want nil", err)
	}
	fmt.Println("produce: delivery to out timed out, as expected")
}
