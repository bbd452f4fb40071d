package follow_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A follower processes only what its leader groups have committed. Here
// the leaders are a map the example moves by hand; in production they are
// franz.NewLeaders or source.NewLeaders, reading the committed offsets of
// the named groups from Kafka.
func ExampleNew() {
	var mu sync.Mutex
	leaderOffset := int64(2) // the leaders processed offsets 0 and 1
	leaders := follow.LeadersFunc(func(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
		mu.Lock()
		defer mu.Unlock()
		out := map[sluice.TopicPartition]int64{}
		for _, tp := range tps {
			out[tp] = leaderOffset
		}
		return out, nil
	})
	fake := testkit.NewFake() // in production: source.NewSource or franz.NewSource, the follower's own group
	src, err := follow.New(fake, leaders, follow.WithInterval(10*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	processed := make(chan int64, 8)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			processed <- r.Offset
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()

	_ = fake.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"))
	_ = fake.Assign("orders", 0)
	fmt.Println("processed", <-processed, <-processed) // 2 and 3 are held back
	mu.Lock()
	leaderOffset = 4 // the leaders committed the rest
	mu.Unlock()
	fmt.Println("processed", <-processed, <-processed)
	cancel()
	fmt.Println("Run:", <-done)
	fmt.Println("committed:", fake.Committed("orders", 0))
	// Output:
	// processed 0 1
	// processed 2 3
	// Run: <nil>
	// committed: 4
}
