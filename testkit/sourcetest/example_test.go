package sourcetest_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// sourceFunc turns a function into a pipeline.Source.
type sourceFunc func(ctx context.Context, g pipeline.Group) error

func (f sourceFunc) Run(ctx context.Context, g pipeline.Group) error { return f(ctx, g) }

// Check wraps a source under test; each breach of the Source contract is
// reported naming the clause it broke. This one delivers a partition it
// never assigned, and forgets to commit what Shutdown returned.
func ExampleCheck() {
	tp := pipeline.TopicPartition{Topic: "t", Partition: 0}
	delivered := make(chan struct{})
	src := sourcetest.Check(sourceFunc(func(ctx context.Context, g pipeline.Group) error {
		g.Deliver(pipeline.TopicPartition{Topic: "t", Partition: 1}, []pipeline.Record{{Topic: "t", Partition: 1}})
		_ = g.Assign([]pipeline.TopicPartition{tp})
		g.Deliver(tp, []pipeline.Record{{Topic: "t", Offset: 0}})
		close(delivered)
		<-ctx.Done()
		g.Shutdown() // returns t/0's final offset, 1, which is never committed
		return nil
	}))
	discard := func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End { return stages.Discard(in) }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, discard) }()
	<-delivered
	cancel()
	fmt.Println("Run:", <-done)
	for _, v := range src.Violations() {
		fmt.Printf("§%d: %s\n", v.Clause, v.Detail)
	}
	// Output:
	// Run: <nil>
	// §2: Group.Deliver of 1 records of t/1, which is never assigned
	// §6: t/0: the final offset 1 that Group.Shutdown returned was not reported committed (Group.Committed) before Source.Run returned
}
