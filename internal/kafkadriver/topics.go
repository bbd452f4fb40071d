package kafkadriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-go/sluice"
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
	b.Produce(t, topic, Numbered("old-%d", 0, 5)...)

	// An old record may come again (its partition lost, at least once);
	// a new one only once.
	r := StartRun(t, src, RunOptions{Once: func(v string) bool { return strings.HasPrefix(v, "orders:new-") }})
	r.Await(map[string]bool{"orders:old-0@0": true, "orders:old-1@1": true, "orders:old-2@2": true,
		"orders:old-3@3": true, "orders:old-4@4": true})
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 5})

	RecreateTopic(t, b, topic, 1)
	produce := NewProducer(t, b, topic)
	want := map[string]bool{}
	for i := range 7 {
		want[fmt.Sprintf("orders:new-%d@%d", i, i)] = true
		produce(0, fmt.Sprintf("new-%d", i))
		if i == first-1 {
			r.Await(want)
		}
	}
	r.Await(want)
	r.Stop()
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

	r := StartRun(t, src, RunOptions{})
	r.Await(map[string]bool{"orders:old-0@0": true, "stays:stay-0@0": true})
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
	r.Await(map[string]bool{"stays:stay-1@1": true})
	b.WaitCommitted(t, group, "stays", map[int32]int64{0: 2})

	// Created again later: consumed from its start.
	if err := b.CreateTopicContext(ctx, "orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	NewProducer(t, b, "orders")(0, "new-0")
	r.Await(map[string]bool{"orders:new-0@0": true})
	r.Stop()
	if got := b.Committed(t, group, "stays"); got[0] != 2 || len(got) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 2}", got)
	}
	if got := b.Committed(t, group, "orders"); got[0] != 1 || len(got) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 1}", got)
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
