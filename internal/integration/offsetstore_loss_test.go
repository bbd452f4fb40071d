package integration

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestOffsetStoreExactlyOnceAfterLoss: member A writes the k records of
// every partition to the store (a txsink.Writer in exactly-once mode over
// a MemStore); its commits to the group are an hour apart, so the group
// has none. The coordinator then throws A out (kfake rejects its
// heartbeats and joins): A loses its partitions and commits nothing. More
// records are produced and B joins: its claim starts every partition at
// the store's k, not at the group's start (no commit: offset 0), and it
// writes the rest. The store holds every value once; its positions and
// the group's commits end at the log end. Throwing a member out takes
// kfake's fault injection.
func TestOffsetStoreExactlyOnceAfterLoss(t *testing.T) {
	// A KIP-848 member thrown out stays in the group until its session
	// expires (its leave is rejected too): 3s, not Kafka's 45s.
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.session.timeout.ms": "3000"}))
	forEachClient(t, func(t *testing.T, c storeClient) {
		const parts, n, k = 4, 60, 25
		topic, group := c.topic(t, b, "osloss", parts, 0)
		var produced []string
		produce := func(from, to int) {
			var recs []sluice.Record
			for i := from; i < to; i++ {
				for p := range int32(parts) {
					v := fmt.Sprintf("%d-%d", p, i)
					produced = append(produced, v)
					recs = append(recs, sluice.Record{Partition: p, Value: []byte(v)})
				}
			}
			b.Produce(t, topic, recs...)
		}
		produce(0, k)
		mem := txsinktest.NewMemStore[string]()
		wa := memWriter(t, mem, "A", 10)
		aObs := newGroupObserver()
		slow := c
		slow.commitEvery = time.Hour
		a := startConsumer(t, "A", slow.newSource(t, b, group, topic, wa), writeValues(wa), pipeline.WithHooks(aObs))
		waitFor(t, "A storing [0, k) of every partition", func() bool {
			for p := range int32(parts) {
				if pos, _ := mem.Position(group, sluice.TopicPartition{Topic: topic, Partition: p}); pos.Next != int64(k) {
					return false
				}
			}
			return true
		}, a)
		faults := b.Cluster().Fault(
			kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
			kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
			kfake.Fault{Keys: []kmsg.Key{kmsg.ConsumerGroupHeartbeat}, Group: group, Err: kerr.FencedMemberEpoch, Count: -1},
		)
		waitFor(t, "A losing its partitions", func() bool { return aObs.lost.Load() >= parts && aObs.owns() == 0 }, a)
		a.stop(t)
		faults.Remove()
		if got := b.Committed(t, group, topic); len(got) != 0 {
			t.Fatalf("the group committed %v before B joined; the test needs the store ahead of the group", got)
		}
		produce(k, n)

		l := &storeLog{}
		wb := memWriter(t, mem, "B", 10)
		storeB := &recordingStore{member: "B", log: l, inner: wb}
		buildB := loggingBuilder(l, "B", writeValues(wb))
		bm := startConsumer(t, "B", c.newSource(t, b, group, topic, storeB), buildB)
		hw := b.HighWatermarks(t, topic)
		b.WaitCommitted(t, group, topic, hw)
		bm.stop(t)

		want := map[int32]int64{}
		for p := range int32(parts) {
			want[p] = int64(k)
		}
		if got := l.firsts("B"); !maps.Equal(got, want) {
			t.Errorf("B's first record by partition: %v, want the store's %d everywhere", got, k)
		}
		checkClaimOrder(t, l, "B")
		checkWrittenOnce(t, mem, produced, group, topic, hw)
	})
}
