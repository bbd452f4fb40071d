package sourcetest_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// sourceFunc turns a function into a sluice.Source.
type sourceFunc func(ctx context.Context, g sluice.Group) error

func (f sourceFunc) Run(ctx context.Context, g sluice.Group) error { return f(ctx, g) }

// Check wraps a source under test; each breach of the Source contract is
// reported naming the clause it broke. This source delivers a partition
// it never assigned, and commits an offset the group never gave it.
func ExampleCheck() {
	tp := sluice.TopicPartition{Topic: "t", Partition: 0}
	ran := make(chan struct{})
	src := sourcetest.Check(sourceFunc(func(ctx context.Context, g sluice.Group) error {
		_ = g.Assign([]sluice.TopicPartition{tp})
		g.Deliver(sluice.TopicPartition{Topic: "t", Partition: 1}, []sluice.Record{{Topic: "t", Partition: 1}})
		g.Committed([]sluice.Offset{{TopicPartition: tp, Next: 7}}, 0, nil)
		close(ran)
		<-ctx.Done()
		g.Shutdown() // nothing to commit: t/0 completed no record
		return nil
	}))
	fmt.Println("Run:", runThenStop(src, ran))
	for _, v := range src.Violations() {
		fmt.Printf("§%d: %s\n", v.Clause, v.Detail)
	}
	// Output:
	// Run: <nil>
	// §2: Group.Deliver of 1 records of t/1, which is never assigned
	// §4: t/0: committed 7, a value the group never returned (from Offsets, Revoke or Shutdown)
}

// CheckShare wraps a share group source under test; each breach of the
// share contract is reported naming the clause it broke. This source
// assigns a partition before it calls TrackAcks, and commits an offset.
func ExampleCheckShare() {
	tp := sluice.TopicPartition{Topic: "t", Partition: 0}
	ran := make(chan struct{})
	src := sourcetest.CheckShare(sourceFunc(func(ctx context.Context, g sluice.Group) error {
		ag := g.(sluice.AckGroup)
		_ = ag.Assign([]sluice.TopicPartition{tp})
		_ = ag.TrackAcks() // too late: an error
		ag.Committed([]sluice.Offset{{TopicPartition: tp, Next: 1}}, 0, nil)
		close(ran)
		<-ctx.Done()
		ag.Shutdown()
		return nil
	}))
	fmt.Println("Run:", runThenStop(src, ran))
	for _, v := range src.Violations() {
		fmt.Printf("§%d: %s\n", v.Clause, v.Detail)
	}
	// Output:
	// Run: <nil>
	// §7: Group.Assign([{t 0}]) called before Group.TrackAcks
	// §7: Group.TrackAcks called after partitions were assigned
	// §10: committed [{{t 0} 1}] (reported with Group.Committed)
}

// runThenStop runs pipeline.Run over src, discarding every record, stops
// it once ran is closed and returns what Run returned.
func runThenStop(src sluice.Source, ran <-chan struct{}) error {
	discard := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, discard) }()
	<-ran
	cancel()
	return <-done
}
