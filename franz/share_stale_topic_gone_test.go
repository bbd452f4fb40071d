package franz

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// lossRecordingGroup is the part of a sluice.AckGroup the share runner
// calls while it handles a poll: it records the partitions assigned,
// delivered and lost.
type lossRecordingGroup struct {
	sluice.AckGroup
	assigned, lost []sluice.TopicPartition
	delivered      []int64
}

func (g *lossRecordingGroup) Assign(tps []sluice.TopicPartition) error {
	g.assigned = append(g.assigned, tps...)
	return nil
}

func (g *lossRecordingGroup) Lose(tps []sluice.TopicPartition) { g.lost = append(g.lost, tps...) }

func (g *lossRecordingGroup) Deliver(_ sluice.TopicPartition, recs []sluice.Record) bool {
	for _, r := range recs {
		g.delivered = append(g.delivered, r.Offset)
	}
	return false
}

func (g *lossRecordingGroup) HighWatermark(sluice.TopicPartition, int64) {}

func (g *lossRecordingGroup) Acks(dst []sluice.Ack) []sluice.Ack { return dst }

func (g *lossRecordingGroup) Wake() <-chan struct{} { return nil }

// topicGoneFetch is a poll in which the client reports topic's partition 0
// gone (its ID unknown to the broker).
func topicGoneFetch(topic string) kgo.Fetches {
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: topic,
		Partitions: []kgo.FetchPartition{{Partition: 0, Err: kerr.UnknownTopicID}}}}}}
}

// recordsFetch is a poll that returns records of topic's partition 0 at
// offsets.
func recordsFetch(topic string, offsets ...int64) kgo.Fetches {
	fp := kgo.FetchPartition{Partition: 0, HighWatermark: offsets[len(offsets)-1] + 1}
	for _, o := range offsets {
		fp.Records = append(fp.Records, &kgo.Record{Topic: topic, Offset: o, Value: []byte("v")})
	}
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: topic, Partitions: []kgo.FetchPartition{fp}}}}}
}

// A fetch the client sent under a topic's old ID may report the topic gone
// after the source consumed it anew, while a fetch under the new ID has
// delivered its records already. That report must not lose the new
// graph nor drop its records (their acknowledgements would be refused and
// the records redelivered); a report that goes on past the grace is a new
// deletion, and is handled.
func TestShareSourceIgnoresTopicGoneFromAFetchUnderTheOldID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = time.Second + shareFetchBound + time.Second
		cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"),
			kgo.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		g := &lossRecordingGroup{}
		r := newShareRunner(&ShareSource{log: slog.New(slog.DiscardHandler)}, g)
		r.cl = cl
		r.anew = newConsumedAnew(cl)
		if r.anew.grace != grace {
			t.Fatalf("grace = %v, want the fetch max wait plus kgo's bound on a share fetch plus a second (%v)", r.anew.grace, grace)
		}
		orders := sluice.TopicPartition{Topic: "orders", Partition: 0}
		poll := func(f kgo.Fetches) {
			r.anew.polling(time.Now())
			r.handle(f)
			r.topicsGone(context.Background())
		}

		poll(recordsFetch("orders", 0, 1))
		poll(topicGoneFetch("orders")) // the topic is deleted and recreated
		if want := []sluice.TopicPartition{orders}; !slices.Equal(g.lost, want) || len(r.held) != 0 {
			t.Fatalf("after the first report: lost %v, held %d records; want lost %v, nothing held", g.lost, len(r.held), want)
		}

		// A poll under the new ID delivers a record of the new topic;
		// the first poll to start after the grace carries the old
		// fetch's report, buffered before the grace ended.
		poll(recordsFetch("orders", 0))
		time.Sleep(grace)
		poll(topicGoneFetch("orders"))
		if len(g.lost) != 1 || len(r.held) != 1 || !r.assigned[orders] {
			t.Fatalf("a report up to the first poll after the grace lost %v (want only the first), held %d records (want 1), assigned %v",
				g.lost, len(r.held), r.assigned)
		}

		// Reported by the next poll: a new deletion.
		poll(topicGoneFetch("orders"))
		if len(g.lost) != 2 || len(r.held) != 0 || r.assigned[orders] {
			t.Fatalf("a report past the grace: lost %v (want orders twice), held %d records (want 0), assigned %v",
				g.lost, len(r.held), r.assigned)
		}
		if want := []int64{0, 1, 0}; !slices.Equal(g.delivered, want) {
			t.Errorf("delivered offsets %v, want %v", g.delivered, want)
		}
	})
}

// A report of a topic consumed anew is stale from then up to and including
// the first poll that starts after the grace (it returns what was answered
// before), however long the source waited before polling.
func TestConsumedAnewStaleUntilThePollAfterTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := consumedAnew{grace: time.Second}
		if c.stale("orders") {
			t.Fatal("a topic never consumed anew reported stale")
		}
		c.consumed("orders", time.Now())
		c.polling(time.Now())
		time.Sleep(time.Second - time.Nanosecond)
		c.polling(time.Now())
		if !c.stale("orders") || c.stale("stays") {
			t.Fatal("stale wrong within the grace")
		}
		time.Sleep(time.Hour) // outcomes awaited before the next poll
		if !c.stale("orders") {
			t.Fatal("a report before the first poll after the grace not stale")
		}
		c.polling(time.Now())
		if !c.stale("orders") {
			t.Fatal("a report of the first poll after the grace not stale")
		}
		c.polling(time.Now())
		if c.stale("orders") || len(c.anew) != 0 {
			t.Fatalf("a report of the second poll after the grace stale; kept %v", c.anew)
		}
	})
}
