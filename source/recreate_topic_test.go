package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic deleted and recreated under the same name while a group source
// consumes it: Run neither stops nor hangs, every record of the new topic
// is delivered (from its start: the group's committed offset and the
// consumer's position belong to the old topic), and what the group commits
// for the new topic is exactly what was processed of it. The new topic
// first gets 2 records (fewer than the old one's 5: the old position is
// out of range), then 5 more.
func TestTopicRecreated(t *testing.T) {
	b := kafkatest.NewBroker(t)
	testTopicRecreated(t, b, newRecreateSource(t, b), 2)
}

// As TestTopicRecreated, the new topic getting its 7 records at
// once: more than the old one had, so that the old topic's position (5)
// is a valid offset of the new one, which must not be where it is
// consumed from (records 0 to 4 would be lost).
func TestTopicRecreatedLonger(t *testing.T) {
	t.Skip(librdkafkaKeepsPositionOfRecreatedTopic)
	b := kafkatest.NewBroker(t)
	testTopicRecreated(t, b, newRecreateSource(t, b), 7)
}

// librdkafkaKeepsPositionOfRecreatedTopic is why the tests of a topic
// recreated with more records than the consumer's position are skipped:
// librdkafka (v2.11.1) keeps its fetch position and the group's commit
// across the recreation, so it consumes the new topic from the old
// position, and the records before it are never delivered; the source
// would have to watch the topic IDs (AdminClient.DescribeTopics) to see
// the recreation. docs/lifecycle.md, "A topic deleted or recreated".
const librdkafkaKeepsPositionOfRecreatedTopic = "source.Source does not detect a recreated topic yet: librdkafka keeps the old topic's position (docs/lifecycle.md, \"A topic deleted or recreated\")"

func newRecreateSource(t *testing.T, b *kafkatest.Broker) sluice.Source {
	return newSource(t, b, "g", "orders", nil)
}

// testTopicRecreated consumes 5 records of topic orders with src in
// group g, deletes and recreates the topic, produces first records to it,
// then the rest of 7, and checks each is delivered once and committed.
func testTopicRecreated(t *testing.T, b *kafkatest.Broker, src sluice.Source, first int) {
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	old := make([]sluice.Record, 5)
	for i := range old {
		old[i] = sluice.Record{Value: fmt.Appendf(nil, "old-%d", i)}
	}
	b.Produce(t, topic, old...)

	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()

	deadline := time.After(groupRecreateWait)
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-seen:
				if !want[v] && strings.HasPrefix(v, "new-") {
					t.Errorf("unexpected record %s", v)
				}
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v", want, groupRecreateWait)
			}
		}
	}
	await(map[string]bool{"old-0@0": true, "old-1@1": true, "old-2@2": true, "old-3@3": true, "old-4@4": true})
	waitCommitted(t, b, group, topic, 5)

	groupRecreateTopic(t, b, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), groupRecreateWait)
	defer pcancel()
	want := map[string]bool{}
	for i := range first {
		want[fmt.Sprintf("new-%d@%d", i, i)] = true
		if err := cl.ProduceSync(pctx, &kgo.Record{Value: fmt.Appendf(nil, "new-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	await(want)
	for i := first; i < 7; i++ {
		want[fmt.Sprintf("new-%d@%d", i, i)] = true
		if err := cl.ProduceSync(pctx, &kgo.Record{Value: fmt.Appendf(nil, "new-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	await(want)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(groupRecreateWait):
		t.Fatalf("Run did not return within %v of its context's end", groupRecreateWait)
	}
	if got := b.Committed(t, group, topic); got[0] != 7 || len(got) != 1 {
		t.Fatalf("committed offsets of %s = %v, want {0: 7}", topic, got)
	}
}

// waitCommitted waits until group's committed offset of partition 0 of
// topic is want.
func waitCommitted(t *testing.T, b *kafkatest.Broker, group, topic string, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupRecreateWait)
	defer cancel()
	for {
		got, err := b.CommittedContext(ctx, group, topic)
		if err == nil && got[0] == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("committed offsets of %s = %v (%v), want {0: %d}", topic, got, err, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// groupRecreateTopic deletes topic and creates it again with one
// partition (a new topic ID), retrying the creation while the deletion
// completes.
func groupRecreateTopic(t *testing.T, b *kafkatest.Broker, topic string) {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupRecreateWait)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", topic, err)
	}
	for {
		err := b.CreateTopicContext(ctx, topic, 1, nil)
		if err == nil {
			return
		}
		if ctx.Err() != nil || !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Fatalf("recreating %s: %v", topic, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

const groupRecreateWait = 30 * time.Second
