package franz_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The leaders of a follower (follow.New) read from Kafka: for each
// partition, the lowest offset that every leader group committed. Here
// "billing" and "audit" committed by hand (with kafkatest's
// Broker.CommitContext, only to set the example up); partition 1 has a
// commit of "billing" only, so it is absent: a follower delivers none of
// its records yet.
func ExampleNewLeaders() {
	b, err := kafkatest.StartBroker(kafkatest.WithTopic("orders", 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for group, offsets := range map[string]map[int32]int64{"billing": {0: 7, 1: 3}, "audit": {0: 5}} {
		if err := b.CommitContext(ctx, group, "orders", offsets); err != nil {
			fmt.Println(err)
		}
	}

	leaders, err := franz.NewLeaders(franz.LeadersConfig{Brokers: b.Addrs(), Groups: []string{"billing", "audit"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leaders.Close() // once the follower's Run returned
	committed, err := leaders.Committed(ctx, []sluice.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range []int32{0, 1} {
		off, ok := committed[sluice.TopicPartition{Topic: "orders", Partition: p}]
		fmt.Printf("orders/%d: %d %v\n", p, off, ok)
	}
	// Output:
	// orders/0: 5 true
	// orders/1: 0 false
}
