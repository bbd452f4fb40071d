package kafkadriver

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

// RecreateWait bounds each wait of the deleted and recreated topic
// scenarios and of RecreateTopic.
const RecreateWait = 60 * time.Second

// TopicRecreated is the scenario of a consumed topic deleted and created
// again under the same name, for a consumer group source src that
// consumes topic "orders" in group "g" on b. It consumes 5 records of the
// old topic, waits for their commit, recreates the topic, produces first
// records to the new one, then the rest of 7, and checks that Run neither
// stops nor hangs, that every record of the new topic is delivered once
// from its start (the group's committed offset and the consumer's position
// belong to the old topic), and that the group's commit is exactly 7 once
// Run returned. With first below 5 the old position is out of the new
// topic's range; with first 7 it is a valid offset of the new topic, which
// must not be where it is consumed from.
func TopicRecreated(t *testing.T, b *kafkatest.Broker, src sluice.Source, first int) {
	t.Helper()
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	old := make([]sluice.Record, 5)
	for i := range old {
		old[i] = sluice.Record{Value: fmt.Appendf(nil, "old-%d", i)}
	}
	b.Produce(t, topic, old...)

	// An old record may come again (its partition lost, at least once);
	// a new one only once.
	r := startRun(t, src, func(v string) bool { return strings.HasPrefix(v, "orders:new-") })
	r.await(map[string]bool{"orders:old-0@0": true, "orders:old-1@1": true, "orders:old-2@2": true,
		"orders:old-3@3": true, "orders:old-4@4": true})
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 5})

	RecreateTopic(t, b, topic, 1)
	produce := newProducer(t, b, topic)
	want := map[string]bool{}
	for i := range 7 {
		want[fmt.Sprintf("orders:new-%d@%d", i, i)] = true
		produce(fmt.Sprintf("new-%d", i))
		if i == first-1 {
			r.await(want)
		}
	}
	r.await(want)
	r.stop()
	if got := b.Committed(t, group, topic); got[0] != 7 || len(got) != 1 {
		t.Fatalf("committed offsets of %s = %v, want {0: 7}", topic, got)
	}
}

// TopicDeletedOtherTopic is the scenario of one of two consumed topics
// deleted, for a consumer group source src that consumes topics "orders"
// and "stays" (created here, one partition each) in group "g" on b: Run
// goes on consuming "stays" (its commits exact) and, once "orders" is
// created again and gets a record, consumes it from its start; the
// group's commits are exact once Run returned ({0: 2} for "stays", and
// {0: 1} for "orders": the new record's, which is also what the old
// topic's was).
func TopicDeletedOtherTopic(t *testing.T, b *kafkatest.Broker, src sluice.Source) {
	t.Helper()
	const group = "g"
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})

	r := startRun(t, src, func(string) bool { return true })
	r.await(map[string]bool{"orders:old-0@0": true, "stays:stay-0@0": true})
	b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), RecreateWait)
	defer cancel()
	if resp, err := adm.DeleteTopics(ctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	// The other topic is consumed on.
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-1")})
	r.await(map[string]bool{"stays:stay-1@1": true})
	b.WaitCommitted(t, group, "stays", map[int32]int64{0: 2})

	// Created again later: consumed from its start.
	if err := b.CreateTopicContext(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	newProducer(t, b, "orders")("new-0")
	r.await(map[string]bool{"orders:new-0@0": true})
	r.stop()
	if got := b.Committed(t, group, "stays"); got[0] != 2 || len(got) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 2}", got)
	}
	if got := b.Committed(t, group, "orders"); got[0] != 1 || len(got) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 1}", got)
	}
}

// run is a pipeline.Run of a source in a scenario, whose graph reports
// every record it processes as "topic:value@offset".
type run struct {
	t        *testing.T
	seen     chan string
	done     chan error
	cancel   context.CancelFunc
	deadline <-chan time.Time
	// once reports whether a record must not be delivered unless
	// awaited.
	once func(string) bool
}

// startRun starts pipeline.Run of src; the test ends it with stop.
func startRun(t *testing.T, src sluice.Source, once func(string) bool) *run {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &run{t: t, seen: make(chan string, 64), done: make(chan error, 1), cancel: cancel,
		deadline: time.After(RecreateWait), once: once}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, rec sluice.Record) error {
			r.seen <- fmt.Sprintf("%s:%s@%d", rec.Topic, rec.Value, rec.Offset)
			return nil
		})
	}
	go func() { r.done <- pipeline.Run(ctx, src, build) }()
	return r
}

// await waits until every record of want was processed (and deletes them
// from want); Run returning meanwhile fails the test.
func (r *run) await(want map[string]bool) {
	r.t.Helper()
	for len(want) > 0 {
		select {
		case v := <-r.seen:
			if !want[v] && r.once(v) {
				r.t.Errorf("record %s delivered, not awaited", v)
			}
			delete(want, v)
		case err := <-r.done:
			r.t.Fatalf("Run returned %v while records %v were awaited", err, want)
		case <-r.deadline:
			r.t.Fatalf("records %v not delivered within %v", want, RecreateWait)
		}
	}
}

// stop cancels Run and wants it to return nil within RecreateWait.
func (r *run) stop() {
	r.t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(RecreateWait):
		r.t.Fatalf("Run did not return within %v of its context's end", RecreateWait)
	}
}

// newProducer returns a function producing one value to topic, through a
// client made after the topic was (re)created: a kgo client that saw a
// topic's old ID refuses its new one.
func newProducer(t *testing.T, b *kafkatest.Broker, topic string) func(value string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return func(value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), RecreateWait)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// RecreateTopic deletes topic on b and creates it again with partitions
// partitions (a new topic ID), retrying the creation while the deletion
// completes, within RecreateWait.
func RecreateTopic(t testing.TB, b *kafkatest.Broker, topic string, partitions int32) {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), RecreateWait)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", topic, err)
	}
	for {
		err := b.CreateTopicContext(ctx, topic, partitions, nil)
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
