package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

// decode turns a record into an order; malformed input is Invalid, so it
// goes to the dead-letter destination instead of stopping the consumer.
func decode(_ context.Context, r sluice.Record) (order, error) {
	var o order
	if err := json.Unmarshal(r.Value, &o); err != nil || o.ID == "" {
		return o, sluice.Invalid(fmt.Errorf("not an order: %q", r.Value))
	}
	return o, nil
}

// Run consumes a source (here the fake one from testkit; in production
// source.NewSource) with one graph per assigned partition. The builder only
// wires stages; Sluice assigns, commits and drains.
func ExampleRun() {
	fake := testkit.NewFake()
	var charged, dead []string // one partition: each is appended by one goroutine
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		orders := stages.Map(in, decode, stages.Name("decode"))
		return stages.Each(orders, func(_ context.Context, o order) error {
			charged = append(charged, fmt.Sprintf("%s %.2f", o.ID, o.Amount))
			return nil
		})
	}
	deadLetter := func(_ context.Context, dl sluice.DeadLetter) error {
		dead = append(dead, fmt.Sprintf("%s@%d from %s: %v", dl.Record.Topic, dl.Record.Offset, dl.Stage, dl.Err))
		return nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pipeline.Run(ctx, fake, build, pipeline.WithDeadLetter(deadLetter)) }()

	_ = fake.Send("orders", 0, []byte(`{"id":"a1","amount":9.5}`), []byte(`garbage`), []byte(`{"id":"a2","amount":3}`))
	_ = fake.Assign("orders", 0)
	for fake.Committed("orders", 0) < 3 {
		<-fake.Changed()
	}
	cancel() // graceful shutdown: drain, commit, close
	fmt.Println("Run:", <-done, "committed:", fake.Committed("orders", 0))
	fmt.Println("charged:", charged)
	fmt.Println("dead letters:", dead)
	// Output:
	// Run: <nil> committed: 3
	// charged: [a1 9.50 a2 3.00]
	// dead letters: [orders@1 from decode: invalid input: not an order: "garbage"]
}

// OnClose releases what a partition's graph opened, once the graph has
// drained (or was lost) and before its final offset is committed.
func ExamplePartition_OnClose() {
	fake := testkit.NewFake()
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		fmt.Printf("open writer for %s/%d\n", p.Topic, p.Partition)
		p.OnClose(func(context.Context) error {
			fmt.Printf("close writer for %s/%d\n", p.Topic, p.Partition)
			return nil
		})
		return stages.Discard(in)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pipeline.Run(ctx, fake, build) }()
	_ = fake.Assign("orders", 0)
	_ = fake.Revoke("orders", 0)
	cancel()
	<-done
	// Output:
	// open writer for orders/0
	// close writer for orders/0
}

// Transient errors (a database restarting) are retried with exponential
// backoff and jitter; Permanent errors and Invalid input are not.
func ExampleWithRetry() {
	fake := testkit.NewFake()
	calls := 0
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			calls++
			if calls < 3 {
				return fmt.Errorf("connection refused") // transient: retried
			}
			return nil
		})
	}
	retry := sluice.RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pipeline.Run(ctx, fake, build, pipeline.WithRetry(retry)) }()
	_ = fake.Send("orders", 0, []byte("x"))
	_ = fake.Assign("orders", 0)
	for fake.Committed("orders", 0) < 1 {
		<-fake.Changed()
	}
	cancel()
	fmt.Println("Run:", <-done, "calls:", calls)
	// Output:
	// Run: <nil> calls: 3
}

// A burst of bad input usually means a bug or a schema change: a
// dead-letter limit stops the consumer instead of dead-lettering
// everything.
func ExampleWithDeadLetterLimit() {
	fake := testkit.NewFake()
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, decode))
	}
	err := make(chan error)
	go func() {
		err <- pipeline.Run(context.Background(), fake, build,
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }),
			pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{MaxConsecutive: 2}))
	}()
	_ = fake.Send("orders", 0, []byte(`{"id":"a"}`), []byte(`x`), []byte(`y`), []byte(`z`))
	_ = fake.Assign("orders", 0)
	fmt.Println(<-err)
	// Output:
	// sluice: dead-letter limit exceeded on orders/0 at offset 3: 3 invalid records in a row (MaxConsecutive 2)
}
