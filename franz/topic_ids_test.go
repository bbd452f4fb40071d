package franz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// replacedTopics finds a topic recreated under its name (another ID) and
// a topic deleted (unknown), and leaves a topic with its fetched ID; a
// topic error without an ID leaves the topic unverified.
func TestReplacedTopics(t *testing.T) {
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "same", 1)
	b.CreateTopic(t, "recreated", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	ids := topicIDsOf(t, cl, "same", "recreated")
	fetched := map[string][16]byte{
		"same":      ids["same"],
		"recreated": {1}, // the ID of a topic since deleted
		"deleted":   {2},
	}
	replaced, unverified, err := replacedTopics(ctx, cl, nil, fetched)
	if err != nil || len(unverified) != 1 || !errors.Is(unverified["deleted"], kerr.UnknownTopicOrPartition) || !slices.Equal(replaced, []string{"recreated"}) {
		t.Fatalf("replacedTopics = %v, %v, %v; want [recreated], deleted unverified (UNKNOWN_TOPIC_OR_PARTITION), nil", replaced, unverified, err)
	}

	b.Cluster().ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr("same"), kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	replaced, unverified, err = replacedTopics(ctx, cl, nil, map[string][16]byte{"same": ids["same"]})
	if err != nil || len(replaced) != 0 || !errors.Is(unverified["same"], kerr.TopicAuthorizationFailed) {
		t.Fatalf("replacedTopics = %v, %v, %v; want none, same: TOPIC_AUTHORIZATION_FAILED, nil", replaced, unverified, err)
	}
}

// topicIDsOf returns the IDs of topics (Metadata).
func topicIDsOf(t *testing.T, cl *kgo.Client, topics ...string) map[string][16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][16]byte)
	for _, rt := range resp.Topics {
		if rt.Topic != nil && rt.ErrorCode == 0 {
			out[*rt.Topic] = rt.TopicID
		}
	}
	if len(out) != len(topics) {
		t.Fatalf("topic IDs of %v: got %v", topics, out)
	}
	return out
}

// A topic that is neither deleted nor recreated, which one Metadata
// answer calls unknown (UNKNOWN_TOPIC_OR_PARTITION: what a broker whose
// metadata lags answers for a topic it does not know yet, and which kgo
// itself treats as retriable until it persists). The commit's check of
// the topic IDs must not take that one answer for a deletion: the
// partition is not lost, no record is delivered twice, and the group's
// commit is exact.
func TestSourceTopicUnknownInOneMetadataAnswerIsNotGone(t *testing.T) {
	b := kafkatest.NewKfake(t)
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, kafkadriver.Numbered("r-%d", 0, 5)...)

	var answered atomic.Bool
	answeredCh := make(chan struct{})
	var processed atomic.Int32
	// arm makes the next Metadata request naming just the topic without
	// auto-creation (the commit's check) answered with the topic unknown.
	arm := func() {
		b.Cluster().ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
			mr := req.(*kmsg.MetadataRequest)
			if len(mr.Topics) != 1 || mr.Topics[0].Topic == nil || *mr.Topics[0].Topic != topic || mr.AllowAutoTopicCreation {
				b.Cluster().KeepControl() // not the check: wait for it
				return nil, nil, false
			}
			if answered.CompareAndSwap(false, true) {
				close(answeredCh)
			}
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(topic), kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			return resp, nil, true
		})
	}
	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if processed.Add(1) == 5 {
				arm() // the commit of what was processed checks the IDs after this
			}
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, newRecreateSource(t, b), build) }()

	got := map[string]int{}
	deadline := time.After(kafkadriver.RecreateWait)
	// collect counts deliveries until n records were delivered.
	collect := func(n int) {
		t.Helper()
		for len(got) < n {
			select {
			case v := <-seen:
				got[v]++
			case err := <-done:
				t.Fatalf("Run returned %v", err)
			case <-deadline:
				t.Fatalf("delivered %v, the unknown answer given: %v", got, answered.Load())
			}
		}
	}
	collect(5)
	select {
	case <-answeredCh:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	case <-deadline:
		t.Fatal("the commit's check of the topic IDs was not answered")
	}
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 5})
	// Five more records: each delivered once, after the first five.
	b.Produce(t, topic, kafkadriver.Numbered("r-%d", 5, 10)...)
	collect(10)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	for len(seen) > 0 {
		got[<-seen]++
	}
	for i := range 10 {
		if v := fmt.Sprintf("r-%d@%d", i, i); got[v] != 1 {
			t.Errorf("record %s delivered %d times, want once (all: %v)", v, got[v], got)
		}
	}
	if c := b.Committed(t, group, topic); c[0] != 10 || len(c) != 1 {
		t.Errorf("committed offsets of %s = %v, want {0: 10}", topic, c)
	}
}

// A broker other than the group's coordinator answers no Metadata request
// (as one slow to answer kgo's metadata loop, whose requests share a
// connection with any other Metadata request to it): the check of the
// topic IDs goes to the coordinator, which groupCoordinator learnt from
// the group's requests, so each check is answered, however many there
// are. Through any broker, kgo's rotation would soon send one to the
// other broker, where it would wait for its context's end.
func TestReplacedTopicsAskTheGroupCoordinator(t *testing.T) {
	const group, topic = "g", "stays"
	b := kafkatest.NewKfake(t, kafkatest.WithNodes(2))
	b.CreateTopic(t, topic, 1)
	c := b.Cluster()
	coordinator := c.CoordinatorFor(group)
	other := 1 - coordinator
	var coord groupCoordinator
	assigned := make(chan struct{})
	var assignedOnce sync.Once
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.WithHooks(&coord), kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			assignedOnce.Do(func() { close(assigned) })
		}))
	if err != nil {
		t.Fatal(err)
	}
	ids := topicIDsOf(t, cl, topic)
	polling, stopPolling := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for polling.Err() == nil {
			cl.PollFetches(polling)
		}
	}()
	defer func() {
		stopPolling()
		<-polled
		cl.Close()
	}()
	select {
	case <-assigned:
	case <-time.After(kafkadriver.RecreateWait):
		t.Fatalf("no partition assigned within %v", kafkadriver.RecreateWait)
	}
	if n := coord.node.Load(); !coord.known.Load() || n != coordinator {
		t.Fatalf("groupCoordinator = %d (known %v), want %d", n, coord.known.Load(), coordinator)
	}

	answer := make(chan struct{}) // closed: other answers again
	defer close(answer)
	c.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() == other {
			c.SleepControl(func() { <-answer })
		}
		return nil, nil, false
	})
	// More checks than kgo's rotation has brokers (the two discovered
	// and the seeds).
	for i := range 2 * (2 + len(b.Addrs())) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		replaced, unverified, err := replacedTopics(ctx, cl, coord.of(cl), map[string][16]byte{topic: ids[topic]})
		cancel()
		if err != nil || len(replaced) != 0 || len(unverified) != 0 {
			t.Fatalf("check %d: replacedTopics = %v, %v, %v; want none, none, nil", i, replaced, unverified, err)
		}
	}
}
