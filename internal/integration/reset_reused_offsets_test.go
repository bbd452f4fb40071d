package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic deleted and created again under its name while a member
// consumes it: the member's position (past the old log) is out of the new
// log's range, and the client resets it (auto.offset.reset, earliest)
// within the same assignment, reading the new records, whose offsets the
// old records had. They are records never delivered before, and every one
// of them is processed (the contract: nothing lost), as after an unclean
// leader election that truncated the log.
func TestRecordsAtReusedOffsetsAfterAResetAreProcessed(t *testing.T) {
	const before, after = 300, 100
	b := kafkatest.NewKfake(t)
	r := newFaultRunSized(t, b, "reused-offsets", 1, before, before)
	a := r.start(t, "A", 50*time.Millisecond, nil, nil)
	waitGroupAt(t, b, r.group, r.topic, uniform(1, before), a)

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, r.topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", r.topic, err)
	}
	b.CreateTopic(t, r.topic, 1)
	// A new client: the broker's own producer keeps the old topic's ID.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range after {
		rec := &kgo.Record{Topic: r.topic, Partition: 0, Value: []byte(fmt.Sprintf("new-%013d", i))}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("producing to the new %s: %v", r.topic, err)
		}
	}

	// Offsets 0..after-1 were processed once for the old records; each
	// new record makes it twice.
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		twice := 0
		for off := range after {
			if r.seen.n[0][off].Load() >= 2 {
				twice++
			}
		}
		if twice == after {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d new records (offsets 0..%d, reused from the deleted topic) processed in 15s", twice, after, after-1)
		}
		<-tick.C
	}
	a.stop(t)
}
