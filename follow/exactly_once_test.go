package follow_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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

// TestFollowExactlyOnceSaturated: a follower whose inner franz
// source runs exactly-once (a transactional producer bound to it), its
// leaders lagging (each read commits 29 more records of every partition),
// a tiny in-flight budget (WithMaxInFlight(10)) and commits due every
// 50ms: the transactional
// group sits beneath the follower's, so a due commit's barrier waits only
// for the records the follower handed on, not for those it holds for the
// leaders. Every record's output is committed exactly once,
// never before the leaders committed the record, the follower's
// committed offsets reach the ends, and Run stops with nil.
func TestFollowExactlyOnceSaturated(t *testing.T) {
	const (
		topic, group, out = "foleos", "g-foleos", "foleos-out"
		partitions        = 6
		perPart           = 300
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic(out, 1))
	b.Fill(t, topic, perPart, 100)
	leaders := &advancingLeaders{step: 29, end: perPart, at: map[sluice.TopicPartition]int64{}}
	src := followedSource(t, b, group, topic)
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "foleos-1"}})
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
		slow := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			time.Sleep(100 * time.Microsecond) // work, not synchronisation
			seen.add(r, leaders.of(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}))
			return r, nil
		})
		return sink.Produce(slow, p, out, func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Key: r.Key, Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)}, nil
		})
	}, pipeline.WithMaxInFlight(10))
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
	counts := map[string]int{}
	for _, r := range b.ReadCommitted(t, out) {
		counts[string(r.Value)]++
	}
	for part := range int32(partitions) {
		for o := range int64(perPart) {
			if c := counts[strconv.Itoa(int(part))+"@"+strconv.FormatInt(o, 10)]; c != 1 {
				t.Errorf("partition %d offset %d: %d committed outputs, want 1", part, o, c)
			}
		}
	}
	if n := len(counts); n != partitions*perPart {
		names := slices.Sorted(maps.Keys(counts))
		t.Errorf("%d distinct outputs, want %d (first: %s)", n, partitions*perPart, strings.Join(names[:min(5, len(names))], ", "))
	}
}

// advPolls counts the source's polls (a sluice.HookPolled).

// TestFollowExactlyOnceStoppedLeader: a follower over an
// exactly-once franz source (a transactional producer bound to it), with
// a small in-flight budget (WithMaxInFlight(10)) and commits due every
// 50ms. The leaders of partition 3 stop at offset 50; those of the other
// partitions committed everything. The follower's wait for the leaders is
// per partition (follow/saturated.go, docs/follow.md): the partitions the
// leaders released must be processed to their ends and committed
// exactly, with their outputs committed once each, while partition 3
// waits at 50; Run stops with nil.
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
	src := followedSource(t, b, group, topic)
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "folstuck-1"}})
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
			seen.add(r, leaders.of(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}))
			return r, nil
		})
		return sink.Produce(rec, p, out, func(r sluice.Record) (sluice.Message, error) {
			return sluice.Message{Key: r.Key, Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)}, nil
		})
	}, pipeline.WithMaxInFlight(10))
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
	counts := map[string]int{}
	for _, r := range b.ReadCommitted(t, out) {
		counts[string(r.Value)]++
	}
	for part, n := range want {
		for o := range n {
			if c := counts[strconv.Itoa(int(part))+"@"+strconv.FormatInt(o, 10)]; c != 1 {
				t.Errorf("partition %d offset %d: %d committed outputs, want 1", part, o, c)
			}
		}
	}
	var total int64
	for _, n := range want {
		total += n
	}
	if len(counts) != int(total) {
		t.Errorf("%d distinct committed outputs, want %d", len(counts), total)
	}
}
