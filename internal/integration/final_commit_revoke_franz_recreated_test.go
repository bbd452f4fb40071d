package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFinalCommitRevokeOfARecreatedTopicFranz is
// TestFinalCommitRevokeOfARecreatedTopicKIP848 with a franz source, under
// KIP-848 and cooperative-sticky: A has processed the 200 records of a
// topic and committed nothing when it is stopped; every commit is
// answered REBALANCE_IN_PROGRESS (retried) until A logs a revoke while
// stopping, while the topic is deleted and created again with 300 new
// records. The franz source checks the topic's ID before every commit (a
// revoke's included), so the retry finds the topic replaced and sends
// nothing: the old topic's offset (200) never lands on the new topic,
// Run returns nil, and the next consumer processes all 300 new records.
func TestFinalCommitRevokeOfARecreatedTopicFranz(t *testing.T) {
	t.Parallel()
	for _, p := range franzProtocols[1:] {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			revokeOfARecreatedTopicFranz(t, p.name, p.opts)
		})
	}
}

func revokeOfARecreatedTopicFranz(t *testing.T, protocol string, protoOpts []kgo.Opt) {
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "frevoke-recreated-franz-"+protocol, 1, 200)
	group, topic := r.group, r.topic

	var revokeSeen atomic.Bool
	inner := slog.DiscardHandler
	if l := kafkatest.Logger(t); l != nil {
		inner = l.Handler()
	}
	opts := append([]kgo.Opt{kgo.ClientID("A"), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second),
		kgo.MetadataMaxAge(100 * time.Millisecond), kgo.MetadataMinAge(10 * time.Millisecond)}, protoOpts...)
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{
		Brokers: b.Addrs(), Group: group, Topics: []string{topic}, CommitInterval: time.Hour,
		Logger: slog.New(messageWatch{text: "partitions revoked while stopping", seen: &revokeSeen, inner: inner}),
	}, Opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	aObs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == 1 }, a)

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
		line := fmt.Sprintf("gen %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %s%x/%d@%d", rt.Topic, rt.TopicID[:4], rp.Partition, rp.Offset)
			}
		}
		if !pass {
			line += " (answered REBALANCE_IN_PROGRESS)"
		}
		mu.Lock()
		commits = append(commits, line)
		mu.Unlock()
		if pass {
			return nil, nil, false
		}
		firstOnce.Do(func() { close(first) })
		return refusalByID(req, kerr.RebalanceInProgress.Code), nil, true
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
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "new-%d", i)})
		}
		recreateErr <- producer.ProduceSync(ctx, recs...).FirstErr()
	}()

	armed.Store(true)
	took, runErr := a.stopTimed(t)
	armed.Store(false)
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
			"the next consumer skips its records 0 to %d", off, off-1)
	}

	newHW := map[int32]int64{0: 300}
	bSeen := newOffsets(newHW)
	bc := startConsumer(t, "B", newFranzSourceEvery(t, b, group, topic, 50*time.Millisecond, append([]kgo.Opt{kgo.ClientID("B")}, protoOpts...)...),
		countingBuilder("B", r.es, bSeen, nil))
	waitGroupAt(t, b, group, topic, newHW, bc)
	bc.stop(t)
	if n := bSeen.distinct(); n != 300 {
		t.Errorf("the next consumer processed %d of the new topic's 300 records: %d lost", n, 300-n)
	}
}
