// Command purego is a consumer built from pipeline, stages, franz, metrics
// and the testkit fake only: CI builds it with CGO_ENABLED=0 to prove that
// a program on the franz source needs no C compiler (.ci/run, "pure Go").
// Run, it processes three records through the fake source and exits.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func build(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
	upper := stages.Map(in, func(_ context.Context, r pipeline.Record) (string, error) {
		return strings.ToUpper(string(r.Value)), nil
	})
	return stages.Each(upper, func(_ context.Context, s string) error {
		fmt.Println(s)
		return nil
	})
}

func main() {
	// The franz source is what a deployment would run; built, not started.
	if _, err := franz.NewSource(franz.Config{Brokers: []string{"localhost:9092"}, Group: "purego", Topics: []string{"in"}}); err != nil {
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
}
