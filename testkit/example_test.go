package testkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The Fake is a sluice.Source whose group assignment the test drives:
// a revoked partition is drained and committed, and a partition assigned
// again is delivered from its committed offset.
func ExampleFake() {
	testkit.RunExample("ExampleFake", func(t *testing.T) {
		fake := testkit.NewFake()
		var mu sync.Mutex
		var seen []string
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, fmt.Sprintf("%s@%d", r.Value, r.Offset))
				return nil
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- pipeline.Run(ctx, fake, build) }()

		_ = fake.Send("clicks", 0, []byte("a"), []byte("b"))
		_ = fake.Assign("clicks", 0)
		fake.WaitCommitted(t, "clicks", 0, 2)
		_ = fake.Revoke("clicks", 0) // drained; its final offset is committed
		_ = fake.Send("clicks", 0, []byte("c"))
		_ = fake.Assign("clicks", 0) // delivered from the committed offset, 2
		fake.WaitCommitted(t, "clicks", 0, 3)
		cancel() // graceful shutdown
		fmt.Println("Run:", <-done)
		fmt.Println("processed:", seen)
		fmt.Println("committed:", fake.Committed("clicks", 0))
	})
	// Output:
	// Run: <nil>
	// processed: [a@0 b@1 c@2]
	// committed: 3
}

// Under testing/synctest the Harness's waits take no real time: a Batch
// holding three records flushes them when its maxWait passes on the
// bubble's fake clock, and only then are they committed.
func ExampleHarness() {
	testkit.RunExample("ExampleHarness", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var writes []string // one partition: appended by one goroutine
			h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				batches := stages.Batch(in, 100, 5*time.Second)
				return stages.Each(batches, func(_ context.Context, rows []sluice.Record) error {
					writes = append(writes, fmt.Sprintf("%d rows", len(rows)))
					return nil
				})
			})
			start := time.Now()
			h.Assign("events", 0)
			h.Send("events", 0, []byte("a"), []byte("b"), []byte("c"))
			synctest.Wait() // everything that can run without the clock ran
			fmt.Println("committed before maxWait:", h.Committed("events", 0))
			h.WaitCommitted("events", 0, 3)
			fmt.Printf("committed after %v: %d\n", time.Since(start), h.Committed("events", 0))
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
			fmt.Println("writes:", writes)
		})
	})
	// Output:
	// committed before maxWait: -1
	// committed after 5s: 3
	// writes: [3 rows]
}

type order struct{ ID string }

// DeadLetters records what a pipeline rejects: here the record a decoder
// marks sluice.Invalid, which is still committed.
func ExampleDeadLetters() {
	testkit.RunExample("ExampleDeadLetters", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dead := testkit.NewDeadLetters()
			h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				orders := stages.Map(in, func(_ context.Context, r sluice.Record) (order, error) {
					var o order
					if err := json.Unmarshal(r.Value, &o); err != nil {
						return o, sluice.Invalid(fmt.Errorf("not an order: %q", r.Value))
					}
					return o, nil
				}, stages.Name("decode"))
				return stages.Discard(orders)
			}, dead.Option())
			h.Assign("orders", 0)
			h.Send("orders", 0, []byte(`{"ID":"a1"}`), []byte(`garbage`), []byte(`{"ID":"a3"}`))
			h.WaitCommitted("orders", 0, 3)
			if err := h.Stop(); err != nil {
				t.Fatal(err)
			}
			for _, dl := range dead.Records() {
				fmt.Printf("%s/%d@%d from %s: %v\n", dl.Record.Topic, dl.Record.Partition, dl.Record.Offset, dl.Stage, dl.Err)
			}
			fmt.Println("offsets:", dead.Offsets("orders", 0), "committed:", h.Committed("orders", 0))
		})
	})
	// Output:
	// orders/0@1 from decode: invalid input: not an order: "garbage"
	// offsets: [1] committed: 3
}
