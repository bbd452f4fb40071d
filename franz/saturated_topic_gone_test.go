package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestSaturatedSourceSeesTopicRecreated: a record of partition 0 holds
// the whole in-flight budget (WithMaxInFlight(1)) until its graph is
// cancelled, so the runtime stays saturated; partition 1 has nothing to
// fetch and is not paused. The topic is deleted and recreated: the
// client reports UNKNOWN_TOPIC_ID in a fetch of partition 1, and only a
// poll hands it over. The source must still see it while saturated: the
// old partitions are lost (which cancels the held record and frees the
// budget) and the new topic is consumed from its start, its commits
// exact. "record": partition 0 holds the held record alone; "batch": it
// holds a batch of 1000 records, most of which kgo keeps buffered while
// partition 0 is paused.
func TestSaturatedSourceSeesTopicRecreated(t *testing.T) {
	for _, c := range []struct {
		name string
		old  int
	}{{"record", 1}, {"batch", 1000}} {
		t.Run(c.name, func(t *testing.T) { saturatedTopicRecreated(t, c.old) })
	}
}

func saturatedTopicRecreated(t *testing.T, old int) {
	const topic, group = "orders", "g"
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, topic, 2)
	recs := make([]sluice.Record, old)
	for i := range recs {
		recs[i] = sluice.Record{Partition: 0, Value: fmt.Appendf(nil, "old-%d", i)}
	}
	b.Produce(t, topic, recs...)
	src := newRecreateSource(t, b)
	g, build := newHeldGraph("old-0", valueOffset, func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return doneEnd(t, b, src)(in)
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build, pipeline.WithMaxInFlight(1)) }()
	deadline := time.After(kafkadriver.RecreateWait)
	g.waitHeld(t, deadline)
	kafkadriver.RecreateTopic(t, b, topic, 2)
	produceToPartitions(t, b, topic, map[int32]int{0: 3, 1: 2})
	want := map[string]bool{}
	for p, n := range map[int32]int{0: 3, 1: 2} {
		for i := range n {
			want[fmt.Sprintf("new-%d-%d@%d", p, i, i)] = true
		}
	}
	for len(want) > 0 {
		select {
		case v := <-g.seen:
			delete(want, v)
		case err := <-done:
			t.Fatalf("Run returned %v while records %v were awaited", err, want)
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("records %v of the recreated topic not delivered within %v while the old record held the budget", want, kafkadriver.RecreateWait)
		}
	}
	stopRun(t, cancel, done)
	if got := b.Committed(t, group, topic); len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("committed offsets of %s = %v, want {0: 3, 1: 2}", topic, got)
	}
}

// produceToPartitions produces n[p] records valued new-p-i to each
// partition p of topic, with a new client (the broker's own producer may
// hold the ID of a topic since recreated).
func produceToPartitions(t *testing.T, b *kafkatest.Broker, topic string, n map[int32]int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	for p, k := range n {
		for i := range k {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "new-%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
