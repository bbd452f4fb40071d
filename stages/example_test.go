package stages_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// runExample runs build over one partition holding values, until every
// record is committed, and stops.
func runExample(build pipeline.Builder, values ...string) {
	fake := testkit.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pipeline.Run(ctx, fake, build) }()
	for _, v := range values {
		_ = fake.Send("orders", 0, []byte(v))
	}
	_ = fake.Assign("orders", 0)
	for fake.Committed("orders", 0) < int64(len(values)) {
		<-fake.Changed()
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println("error:", err)
	}
	fmt.Println("committed:", fake.Committed("orders", 0))
}

// Pool calls a slow function (here: a lookup) for several records at once
// and still hands results on in offset order.
func ExamplePool() {
	lookup := func(ctx context.Context, r sluice.Record) (string, error) {
		time.Sleep(time.Duration(len(r.Value)) * time.Millisecond) // a remote call
		return strings.ToUpper(string(r.Value)), nil
	}
	runExample(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		upper := stages.Pool(in, 4, lookup)
		return stages.Each(upper, func(_ context.Context, s string) error {
			fmt.Println(s)
			return nil
		})
	}, "pear", "fig", "banana", "kiwi")
	// Output:
	// PEAR
	// FIG
	// BANANA
	// KIWI
	// committed: 4
}

// Batch groups records for one write; their offsets commit when the write
// returns. A batch is also flushed after maxWait and when the partition is
// revoked or the consumer stops.
func ExampleBatch() {
	runExample(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		batches := stages.Batch(in, 2, time.Second)
		return stages.Each(batches, func(_ context.Context, b []sluice.Record) error {
			fmt.Println("insert", len(b), "rows starting at offset", b[0].Offset)
			return nil
		})
	}, "a", "b", "c", "d")
	// Output:
	// insert 2 rows starting at offset 0
	// insert 2 rows starting at offset 2
	// committed: 4
}

// Route sends each record down one branch; pipeline.All joins the ends.
// A record commits when its own branch finished it.
func ExampleRoute() {
	runExample(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		byKind := stages.Route(in, 2, func(r sluice.Record) int {
			if strings.HasPrefix(string(r.Value), "refund") {
				return 1
			}
			return 0
		})
		return pipeline.All(
			stages.Discard(byKind[0]),
			stages.Each(byKind[1], func(_ context.Context, r sluice.Record) error {
				fmt.Println("refund at offset", r.Offset)
				return nil
			}),
		)
	}, "sale 1", "refund 2", "sale 3", "refund 4")
	// Output:
	// refund at offset 1
	// refund at offset 3
	// committed: 4
}

// A SharedBatcher writes one batch for the values of every partition, as
// a bulk insert wants; each partition commits its share once the batch is
// written.
func ExampleNewSharedBatcher() {
	insert := func(_ context.Context, rows []string) error {
		// Partitions fill the batch concurrently: their order varies.
		sorted := slices.Sorted(slices.Values(rows))
		fmt.Println("INSERT", len(rows), "rows:", strings.Join(sorted, ","))
		return nil
	}
	rows := stages.NewSharedBatcher(insert, 4, time.Second)

	fake := testkit.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- pipeline.Run(ctx, fake, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			vals := stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) { return string(r.Value), nil })
			return rows.Feed(vals)
		})
	}()
	_ = fake.Send("clicks", 0, []byte("a"), []byte("b"))
	_ = fake.Send("clicks", 1, []byte("c"), []byte("d"))
	_ = fake.Assign("clicks", 0, 1)
	for fake.Committed("clicks", 0) < 2 || fake.Committed("clicks", 1) < 2 {
		<-fake.Changed()
	}
	cancel()
	<-done
	// Output:
	// INSERT 4 rows: a,b,c,d
}

// Tee sends every order down two branches: one saves it, the other
// alerts on large ones. An order's offset commits once both branches are
// done with it; the alert branch filtering an order out counts as done.
func ExampleTee() {
	saved := 0
	runExample(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		branches := stages.Tee(in, 2)
		large := stages.Filter(branches[1], func(r sluice.Record) bool { return len(r.Value) > 3 })
		return pipeline.All(
			stages.Each(branches[0], func(_ context.Context, r sluice.Record) error {
				saved++ // only this branch's goroutine touches it
				return nil
			}),
			stages.Each(large, func(_ context.Context, r sluice.Record) error {
				fmt.Println("alert: large order", string(r.Value), "at offset", r.Offset)
				return nil
			}),
		)
	}, "12", "90000", "7", "4500")
	fmt.Println("saved:", saved)
	// Output:
	// alert: large order 90000 at offset 1
	// alert: large order 4500 at offset 3
	// committed: 4
	// saved: 4
}
