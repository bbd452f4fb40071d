package integration

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFinalCommitRevokeCommitHeldPartitionsMoving is
// TestFinalCommitIllegalGenerationPartitionsMoving with the commit A
// sends in the revoke (of the partitions B takes, revoked while A's final
// commit waits to be retried) held unanswered at the broker until A's
// Run returned: a coordinator slow to answer one commit. That commit
// carries the final offsets of every partition A owned, the ones it keeps
// too, so nothing waits behind it: A sends no other commit, Run returns
// within CloseTimeout with an error naming the final commit that did not
// finish, and no commit of A lands on a partition once B owns it.
func TestFinalCommitRevokeCommitHeldPartitionsMoving(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 200
	const closeTimeout = 3 * time.Second
	r := newFaultRun(t, kafkatest.NewKfake(t), "fgen-moving-held", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	log := newSentLog(t, "OffsetCommit")
	var revokeSeen atomic.Bool
	ov := map[string]any{"client.id": "A", "reconnect.backoff.max.ms": 500, "debug": "protocol",
		"heartbeat.interval.ms": 100, "session.timeout.ms": 20000}
	src, err := source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{
		Brokers: b.Addrs(), Group: group, Topics: []string{topic}, CommitInterval: time.Hour, CloseTimeout: closeTimeout,
		Logger: slog.New(messageWatch{text: "partitions revoked while stopping", seen: &revokeSeen, inner: log}),
	}, Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	a := startAOwning(t, r, src, parts)
	aID := memberID(t, b, group, "A")

	var mu sync.Mutex
	var aCommits []string
	firstRefused := map[int32]bool{} // the partitions of the refused final commit
	inRevoke := map[int32]bool{}     // those of the held commit: revoked for B
	sent := map[int32]bool{}         // those of A's later commits, not held
	var armed, refusedOnce, heldOnce atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld)
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.MemberID != aID {
			return nil
		}
		refuse := !refusedOnce.Swap(true)
		hold := !refuse && revokeSeen.Load() && !heldOnce.Swap(true)
		mu.Lock()
		defer mu.Unlock()
		line := fmt.Sprintf("gen %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
				switch {
				case refuse:
					firstRefused[rp.Partition] = true
				case hold:
					inRevoke[rp.Partition] = true
				default:
					sent[rp.Partition] = true
				}
			}
		}
		switch {
		case refuse:
			aCommits = append(aCommits, line+" (answered ILLEGAL_GENERATION)")
			return refusal(req, kerr.IllegalGeneration.Code)
		case hold:
			aCommits = append(aCommits, line+" (held until A's Run returned)")
			mu.Unlock()
			b.Cluster().SleepControl(func() { <-release })
			mu.Lock()
			return nil
		}
		aCommits = append(aCommits, line)
		return nil
	})
	held, unhold := holdJoin(t, b, aID, &armed)

	armed.Store(true)
	bSeen := newOffsets(hw)
	bc := startConsumer(t, "B", newSourceWith(t, b, group, topic, "B", 50*time.Millisecond, nil),
		countingBuilder("B", r.es, bSeen, nil))
	waitChan(t, held, "A's JoinGroup for B's rebalance", a, bc)

	releaseWhenSent(log, a, unhold)
	go func() {
		<-a.Done()
		releaseHeld()
	}()
	took, runErr := a.stopTimed(t)
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("A stopped in %v: Run = %v; A's commits at the broker: %q; B processed per partition %v",
		took, runErr, aCommits, processedPer(bSeen))
	if !refusedOnce.Load() {
		t.Fatalf("no commit of A was answered ILLEGAL_GENERATION: the scenario did not happen")
	}
	if !revokeSeen.Load() || len(inRevoke) == 0 {
		t.Fatalf("no commit of a revoke while stopping was held: the scenario did not happen")
	}
	for p := range firstRefused {
		if !inRevoke[p] {
			t.Errorf("the held revoke commit left out partition %d of A's final offsets (it carries %v)", p, slices.Sorted(maps.Keys(inRevoke)))
		}
	}
	if len(sent) > 0 {
		t.Errorf("A sent commits of partitions %v while the revoke commit was held, want none", slices.Sorted(maps.Keys(sent)))
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "did not finish within Config.CloseTimeout") {
		t.Errorf("A: Run = %v, want an error naming the final commit that did not finish within Config.CloseTimeout", runErr)
	}
	if took > 2*closeTimeout {
		t.Errorf("A's Run took %v, want it bounded by CloseTimeout (%v) plus the drain", took, closeTimeout)
	}
}

// TestFinalCommitRevokeOfARecreatedTopicKIP848: A (librdkafka, KIP-848)
// has processed the 200 records of a topic and committed nothing when it
// is stopped. Its final commit is answered STALE_MEMBER_EPOCH (retried;
// every attempt is refused until A logs a revoke while stopping, which
// under KIP-848 it does not) while the topic is deleted and created again
// with 300 new records; the broker then moves the partition by topic ID,
// revoking the old topic's. librdkafka commits by name, so neither that
// revoke nor a retry of the final commit may commit the old topic's
// offset (200) onto the new topic: the group keeps nothing of A, and the
// next consumer processes all 300 records of the new topic.
func TestFinalCommitRevokeOfARecreatedTopicKIP848(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "fgen-recreated-848", 1, 200)
	group, topic := r.group, r.topic

	var revokeSeen atomic.Bool
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, CommitInterval: time.Hour, Logger: revokeWatchLogger(t, &revokeSeen)},
		Overrides:   map[string]any{"group.protocol": "consumer", "client.id": "A", "topic.metadata.refresh.interval.ms": 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := startAOwning(t, r, src, 1)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}
	revokeOfARecreatedTopic(t, r, a, &revokeSeen, kerr.StaleMemberEpoch, func() sluice.Source {
		return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond},
			Overrides: map[string]any{"group.protocol": "consumer", "client.id": "B"}})
	})
}
