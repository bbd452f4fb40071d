package follow_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// startExactlyOnceFollower starts a follower of leaders over an
// exactly-once franz source of group on topic (a transactional producer
// with id txnID bound to it; commits due every 50ms), with a small
// in-flight budget (WithMaxInFlight(10)). Its graphs record every record
// in the returned followedSeen with the leaders' offset at that time,
// spend work on it, and produce "<partition>@<offset>" to out.
func startExactlyOnceFollower(t *testing.T, b *kafkatest.Broker, group, topic, out, txnID string, leaders *advancingLeaders, work time.Duration) (*testkit.Running, *followedSeen) {
	t.Helper()
	src := followedSource(t, b, group, topic)
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: txnID}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	f, err := follow.New(src, leaders, follow.WithInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	seen := &followedSeen{}
	run := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		rec := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if work > 0 {
				time.Sleep(work) // work, not synchronisation
			}
			seen.add(r, leaders.of(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}))
			return r, nil
		})
		return sink.Produce(rec, p, out, func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Key: r.Key, Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)}, nil
		})
	}, pipeline.WithMaxInFlight(10))
	return run, seen
}

// checkOutputsOnce checks that out holds, read committed, one output for
// each record of partition p below want[p], and no other output.
func checkOutputsOnce(t *testing.T, b *kafkatest.Broker, out string, want map[int32]int64) {
	t.Helper()
	counts := map[string]int{}
	for _, r := range b.ReadCommitted(t, out) {
		counts[string(r.Value)]++
	}
	var total int64
	for part, n := range want {
		total += n
		for o := range n {
			if c := counts[strconv.Itoa(int(part))+"@"+strconv.FormatInt(o, 10)]; c != 1 {
				t.Errorf("partition %d offset %d: %d committed outputs, want 1", part, o, c)
			}
		}
	}
	if len(counts) != int(total) {
		t.Errorf("%d distinct committed outputs, want %d", len(counts), total)
	}
}

// TestFollowExactlyOnceSaturated: a follower whose inner franz source
// runs exactly-once, its leaders lagging (each read commits 29 more
// records of every partition), under a tiny in-flight budget: the
// transactional group sits beneath the follower's, so a due commit's
// barrier waits only for the records the follower handed on, not for
// those it holds for the leaders. Every record's output is committed
// exactly once, never before the leaders committed the record, the
// follower's committed offsets reach the ends, and Run stops with nil.
func TestFollowExactlyOnceSaturated(t *testing.T) {
	const (
		topic, group, out = "foleos", "g-foleos", "foleos-out"
		partitions        = 6
		perPart           = 300
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic(out, 1))
	b.Fill(t, topic, perPart, 100)
	leaders := &advancingLeaders{step: 29, end: perPart, at: map[sluice.TopicPartition]int64{}}
	run, seen := startExactlyOnceFollower(t, b, group, topic, out, "foleos-1", leaders, 100*time.Microsecond)
	want := map[int32]int64{}
	for i := range int32(partitions) {
		want[i] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := run.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if _, early := seen.snapshot(); len(early) > 0 {
		t.Errorf("records processed before the leaders committed them: %v", early)
	}
	if c := b.Committed(t, group, topic); !maps.Equal(c, want) {
		t.Fatalf("committed %v, want %v", c, want)
	}
	checkOutputsOnce(t, b, out, want)
}

// TestFollowExactlyOnceStoppedLeader: a follower over an exactly-once
// franz source, under a small in-flight budget. The leaders of partition
// 3 stop at offset 50; those of the other partitions committed
// everything. The follower's wait for the leaders is per partition
// (follow/saturated.go, docs/follow.md): the partitions the leaders
// released must be processed to their ends and committed exactly, with
// their outputs committed once each, while partition 3 waits at 50; Run
// stops with nil.
func TestFollowExactlyOnceStoppedLeader(t *testing.T) {
	const (
		topic, group, out = "folstuck", "g-folstuck", "folstuck-out"
		partitions        = 4
		perPart           = 200
		stuckAt           = 50
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic(out, 1))
	b.Fill(t, topic, perPart, 100)
	leaders := &advancingLeaders{step: perPart, end: perPart, caps: map[int32]int64{3: stuckAt}, at: map[sluice.TopicPartition]int64{}}
	run, seen := startExactlyOnceFollower(t, b, group, topic, out, "folstuck-1", leaders, 0)
	want := map[int32]int64{0: perPart, 1: perPart, 2: perPart, 3: stuckAt}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := b.Committed(t, group, topic)
		if maps.Equal(c, want) {
			break
		}
		if time.Now().After(deadline) {
			got, _ := seen.snapshot()
			n := map[int32]int{}
			for part, offs := range got {
				n[part] = len(offs)
			}
			t.Fatalf("after 30s: committed %v, want %v (records processed by partition: %v)", c, want, n)
		}
		select {
		case <-run.Done():
			t.Fatalf("Run returned %v", run.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := run.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if c := b.Committed(t, group, topic); !maps.Equal(c, want) {
		t.Fatalf("committed %v after the stop, want %v", c, want)
	}
	checkOutputsOnce(t, b, out, want)
}
