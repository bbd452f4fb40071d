package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// messageWatch is a slog.Handler that sets seen once a record whose
// message contains text is logged; every record then goes on to inner.
type messageWatch struct {
	text  string
	seen  *atomic.Bool
	inner slog.Handler
}

func (h messageWatch) Enabled(context.Context, slog.Level) bool { return true }

func (h messageWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.text) {
		h.seen.Store(true)
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h messageWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return messageWatch{text: h.text, seen: h.seen, inner: h.inner.WithAttrs(as)}
}

func (h messageWatch) WithGroup(name string) slog.Handler {
	return messageWatch{text: h.text, seen: h.seen, inner: h.inner.WithGroup(name)}
}

// TestFinalCommitRevokeOfARecreatedTopicKIP848: A (librdkafka, KIP-848)
// has processed the 200 records of a topic and committed nothing when it
// is stopped. Its final commit is answered STALE_MEMBER_EPOCH (retried;
// every attempt is refused until A logs a revoke while stopping) while
// the topic is deleted and created again with 300 new records; the broker
// then moves the partition by topic ID, revoking the old topic's.
// While running, the source loses a recreated topic's partitions before
// serving a revoke (topicsRecreated), so that a revoke never commits the
// old topic's offsets onto the new one; while closing it skips that, and
// a revoke while stopping now commits the final offsets. The group must
// not end up with the old topic's offset (200) on the new topic: the next
// consumer would skip the new topic's records 0 to 199. (Before a revoke
// while stopping committed anything, the revoke only dropped the
// partition: the group kept nothing and the next consumer processed all
// 300.)
func TestFinalCommitRevokeOfARecreatedTopicKIP848(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "fgen-recreated-848", 1, 200)
	group, topic := r.group, r.topic

	var revokeSeen atomic.Bool
	inner := slog.DiscardHandler
	if l := kafkatest.Logger(t); l != nil {
		inner = l.Handler()
	}
	log := messageWatch{text: "partitions revoked while stopping", seen: &revokeSeen, inner: inner}
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, CommitInterval: time.Hour, Logger: slog.New(log)},
		Overrides:   map[string]any{"group.protocol": "consumer", "client.id": "A", "topic.metadata.refresh.interval.ms": 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	aObs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == 1 }, a)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}

	// Every commit of A is answered STALE_MEMBER_EPOCH until A logs a
	// revoke while stopping; that one, and any later, reaches the group.
	// The first refusal starts the topic's recreation, which completes
	// while the final commit is retried.
	var armed atomic.Bool
	first := make(chan struct{})
	var firstOnce sync.Once
	var mu sync.Mutex
	var commits []string
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.Group != group {
			return nil, nil, false
		}
		pass := revokeSeen.Load()
		line := fmt.Sprintf("epoch %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %s/%d@%d", rt.Topic, rp.Partition, rp.Offset)
			}
		}
		if !pass {
			line += " (answered STALE_MEMBER_EPOCH)"
		}
		mu.Lock()
		commits = append(commits, line)
		mu.Unlock()
		if pass {
			return nil, nil, false
		}
		firstOnce.Do(func() { close(first) })
		return refusal(req, kerr.StaleMemberEpoch.Code), nil, true
	})
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	recreateErr := make(chan error, 1)
	go func() {
		select {
		case <-first:
		case <-a.Done():
			recreateErr <- errors.New("A's Run returned before its first commit")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
		defer cancel()
		adm, err := b.Admin()
		if err != nil {
			recreateErr <- err
			return
		}
		if resp, err := adm.DeleteTopics(ctx, topic); err != nil || resp.Error() != nil {
			recreateErr <- fmt.Errorf("delete: %v %v", err, resp.Error())
			return
		}
		for {
			err := b.CreateTopicContext(ctx, topic, 1, nil)
			if err == nil {
				break
			}
			if ctx.Err() != nil || !errors.Is(err, kerr.TopicAlreadyExists) {
				recreateErr <- fmt.Errorf("create: %w", err)
				return
			}
			time.Sleep(50 * time.Millisecond) // the deletion completing: polled, not a synchronisation
		}
		// A new client: one that knew the old topic ID produces to it.
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "new-%d", i)})
		}
		recreateErr <- producer.ProduceSync(ctx, recs...).FirstErr()
	}()

	armed.Store(true)
	took, runErr := a.stopTimed(t)
	armed.Store(false) // the next consumer's commits go through
	if err := <-recreateErr; err != nil {
		t.Fatalf("recreating %s: %v", topic, err)
	}
	left := b.Committed(t, group, topic)
	mu.Lock()
	t.Logf("A stopped in %v: Run = %v; revoke while stopping logged: %v; A's commits: %q; the group keeps %v",
		took, runErr, revokeSeen.Load(), commits, left)
	mu.Unlock()
	if off, ok := left[0]; ok && off != 0 {
		t.Errorf("the group keeps offset %d of partition 0 on the recreated topic, of which nothing was processed: "+
			"the next consumer skips its records 0 to %d (the old topic's final offset committed onto the new topic)", off, off-1)
	}

	// The next consumer of the group must process every record of the
	// new topic.
	newHW := map[int32]int64{0: 300}
	bSeen := newOffsets(newHW)
	bSrc := sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond},
		Overrides: map[string]any{"group.protocol": "consumer", "client.id": "B"}})
	bc := startConsumer(t, "B", bSrc, countingBuilder("B", r.es, bSeen, nil))
	waitGroupAt(t, b, group, topic, newHW, bc)
	bc.stop(t)
	if n := bSeen.distinct(); n != 300 {
		t.Errorf("the next consumer processed %d of the new topic's 300 records: %d lost", n, 300-n)
	}
}
