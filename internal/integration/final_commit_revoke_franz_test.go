package integration

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// franzProtocol is a group protocol of a franz source: its name and the
// kgo options that select it.
type franzProtocol struct {
	name string
	opts []kgo.Opt
}

// franzProtocols are the group protocols of a franz source: kgo's eager
// range balancer, its default cooperative-sticky one, and KIP-848.
var franzProtocols = []franzProtocol{
	{"range", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
	{"cooperative-sticky", nil},
	{"consumer", franz848()},
}

// TestFinalCommitRevokeWhileStoppingFranz: A (franz) has processed every
// record and committed nothing (its interval is an hour) when it is
// stopped. Every commit of the group is answered REBALANCE_IN_PROGRESS
// (retried every 100ms) until A logs a revoke while stopping; B joins
// after the first refusal, so kgo raises A's revoke (before the
// JoinGroup under range, after the SyncGroup under cooperative-sticky,
// from the heartbeat under KIP-848) while A's final commit is retried,
// and OnPartitionsRevoked blocks until the poll loop serves it. The
// revoke's commit carries the final offsets of every partition A still
// owns: no deadlock between kgo's commit, its rebalance and LeaveGroup;
// Run returns nil within CloseTimeout; no commit is past what was
// processed, none regresses; the group keeps exactly the high
// watermarks and B processes nothing again.
func TestFinalCommitRevokeWhileStoppingFranz(t *testing.T) {
	runFranzProtocols(t, franzProtocols, revokeWhileStoppingFranz)
}

func revokeWhileStoppingFranz(t *testing.T, protocol string, protoOpts []kgo.Opt) {
	const closeTimeout = 10 * time.Second
	r, a, revokeSeen := startFranzAOwning(t, "frevoke-franz-"+protocol, closeTimeout, protoOpts)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	var armed, aDone atomic.Bool
	refused := make(chan struct{})
	var refusedOnce sync.Once
	var mu sync.Mutex
	var commits []string                   // every commit request while A runs, in order
	accepted := map[int32]map[int64]bool{} // the offsets passed on to the broker while A runs
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.Group != group || aDone.Load() {
			return nil
		}
		refuse := !revokeSeen.Load()
		mu.Lock()
		defer mu.Unlock()
		line := fmt.Sprintf("%s gen %d:", req.MemberID, req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
				if !refuse {
					if accepted[rp.Partition] == nil {
						accepted[rp.Partition] = map[int64]bool{}
					}
					accepted[rp.Partition][rp.Offset] = true
				}
			}
		}
		if refuse {
			commits = append(commits, line+" (answered REBALANCE_IN_PROGRESS)")
			refusedOnce.Do(func() { close(refused) })
			return refusalByID(req, kerr.RebalanceInProgress.Code)
		}
		commits = append(commits, line)
		return nil
	})

	armed.Store(true)
	res, bSeen, bc := stopWithFranzJoiner(t, r, a, &aDone, refused, protoOpts)
	waitFor(t, "B owning every partition", func() bool { return len(b.Group(t, group).Members) == 1 }, bc)
	bc.stop(t)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("A stopped in %v: Run = %v; commits while A ran: %q; B processed per partition %v",
		res.took, res.err, commits, processedPer(bSeen))
	r.watch.logIfFailed(t)
	if !revokeSeen.Load() {
		t.Fatalf("A logged no revoke while stopping: the scenario did not happen")
	}
	if res.err != nil {
		t.Errorf("A: Run = %v, want nil", res.err)
	}
	if res.took > closeTimeout {
		t.Errorf("A's Run took %v, more than CloseTimeout (%v)", res.took, closeTimeout)
	}
	for p, offs := range accepted {
		if len(offs) > 1 {
			t.Errorf("partition %d: A committed different offsets %v", p, offs)
		}
	}
	r.watch.check(t)
	if left := b.Committed(t, group, topic); !maps.Equal(left, hw) {
		t.Errorf("the group kept %v, want the high watermarks %v", left, hw)
	}
	for p, n := range processedPer(bSeen) {
		if n != 0 {
			t.Errorf("B processed %d records of partition %d again, want 0 (A's final offsets were committed in the revoke)", n, p)
		}
	}
	r.seen.checkTimes(t, once)
}

// refusalByID is refusal echoing each topic's ID as well as its name:
// OffsetCommit v10 (kgo) names topics by ID only, and a response topic
// without it matches none of the request's.
func refusalByID(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := refusal(req, code)
	for i, rt := range req.Topics {
		resp.Topics[i].TopicID = rt.TopicID
	}
	return resp
}

// TestFinalCommitRevokeCommitHeldFranz is TestFinalCommitRevokeWhileStoppingFranz
// with the commit A sends in its revoke while stopping held at the broker
// until A's Run returned (a coordinator slow to answer; kgo's
// OnPartitionsRevoked waits for it meanwhile). Run returns within
// CloseTimeout with an error naming the final commit that did not
// finish, and the held commit, processed by the broker only after A's Run
// returned and B took the partitions over, does not land: the group keeps
// nothing of A (B commits nothing before it stops).
func TestFinalCommitRevokeCommitHeldFranz(t *testing.T) {
	runFranzProtocols(t, franzProtocols, revokeCommitHeldFranz)
}

func revokeCommitHeldFranz(t *testing.T, protocol string, protoOpts []kgo.Opt) {
	const closeTimeout = 3 * time.Second
	r, a, revokeSeen := startFranzAOwning(t, "frevoke-franz-held-"+protocol, closeTimeout, protoOpts)
	b, group, topic := r.b, r.group, r.topic

	var armed, aDone, heldOnce atomic.Bool
	refused := make(chan struct{})
	var refusedOnce sync.Once
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld)
	var mu sync.Mutex
	var commits []string
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.Group != group || aDone.Load() {
			return nil
		}
		refuse := !revokeSeen.Load()
		hold := !refuse && !heldOnce.Swap(true)
		line := fmt.Sprintf("%s gen %d:", req.MemberID, req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
			}
		}
		switch {
		case refuse:
			line += " (answered REBALANCE_IN_PROGRESS)"
		case hold:
			line += " (held until A's Run returned)"
		}
		mu.Lock()
		commits = append(commits, line)
		mu.Unlock()
		if refuse {
			refusedOnce.Do(func() { close(refused) })
			return refusalByID(req, kerr.RebalanceInProgress.Code)
		}
		if hold {
			b.Cluster().SleepControl(func() { <-release })
		}
		return nil
	})

	armed.Store(true)
	res, bSeen, bc := stopWithFranzJoiner(t, r, a, &aDone, refused, protoOpts)
	waitFor(t, "B alone in the group, processing every record", func() bool {
		return len(b.Group(t, group).Members) == 1 && bSeen.distinct() == r.total
	}, bc)
	releaseHeld()
	// The held commit is processed once released; whatever the broker
	// answers it, nothing of A may be committed: B owns every partition.
	landed := map[int32]int64{}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && len(landed) == 0 {
		landed = b.Committed(t, group, topic)
		time.Sleep(50 * time.Millisecond) // polling the broker, bounded by deadline
	}
	bc.stop(t)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("A stopped in %v: Run = %v; commits while A ran: %q; B processed per partition %v; committed after the release %v",
		res.took, res.err, commits, processedPer(bSeen), landed)
	if !revokeSeen.Load() || !heldOnce.Load() {
		t.Fatalf("no revoke commit while stopping was held: the scenario did not happen")
	}
	if res.err == nil || !strings.Contains(res.err.Error(), "did not finish within Config.CloseTimeout") {
		t.Errorf("A: Run = %v, want an error naming the final commit that did not finish within Config.CloseTimeout", res.err)
	}
	if res.took > 2*closeTimeout {
		t.Errorf("A's Run took %v, want it bounded by CloseTimeout (%v)", res.took, closeTimeout)
	}
	if len(landed) != 0 {
		t.Errorf("A's held commit landed after A's Run returned and B owned every partition: the group keeps %v", landed)
	}
	r.watch.check(t)
}

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
	runFranzProtocols(t, franzProtocols[1:], revokeOfARecreatedTopicFranz)
}

func revokeOfARecreatedTopicFranz(t *testing.T, protocol string, protoOpts []kgo.Opt) {
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "frevoke-recreated-franz-"+protocol, 1, 200)
	var revokeSeen atomic.Bool
	src := newFranzA(t, r, 0, revokeWatchLogger(t, &revokeSeen),
		append([]kgo.Opt{kgo.MetadataMaxAge(100 * time.Millisecond), kgo.MetadataMinAge(10 * time.Millisecond)}, protoOpts...)...)
	a := startAOwning(t, r, src, 1)
	revokeOfARecreatedTopic(t, r, a, &revokeSeen, kerr.RebalanceInProgress, func() sluice.Source {
		return newFranzSourceEvery(t, b, r.group, r.topic, 50*time.Millisecond, append([]kgo.Opt{kgo.ClientID("B")}, protoOpts...)...)
	})
}

// startFranzAOwning starts member A (franz, with closeTimeout and the
// group protocol of protoOpts) on a new fault run name of 4 partitions of
// 200 records, and returns once A owns every partition; revokeSeen is set
// once A logs a revoke while stopping.
func startFranzAOwning(t *testing.T, name string, closeTimeout time.Duration, protoOpts []kgo.Opt) (r *faultRun, a *consumer, revokeSeen *atomic.Bool) {
	t.Helper()
	const parts, perPartition = 4, 200
	r = newFaultRun(t, kafkatest.NewKfake(t), name, parts, perPartition)
	revokeSeen = new(atomic.Bool)
	return r, startAOwning(t, r, newFranzA(t, r, closeTimeout, revokeWatchLogger(t, revokeSeen), protoOpts...), parts), revokeSeen
}
