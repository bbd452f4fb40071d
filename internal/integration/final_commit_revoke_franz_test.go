package integration

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	const parts, perPartition = 4, 200
	const closeTimeout = 10 * time.Second
	r := newFaultRun(t, kafkatest.NewKfake(t), "frevoke-franz-"+protocol, parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	var revokeSeen atomic.Bool
	a := startAOwning(t, r, newFranzA(t, r, closeTimeout, revokeWatchLogger(t, &revokeSeen), protoOpts...), parts)

	var armed, aDone atomic.Bool
	refused := make(chan struct{})
	var refusedOnce sync.Once
	var mu sync.Mutex
	var commits []string                   // every commit request while A runs, in order
	accepted := map[int32]map[int64]bool{} // the offsets passed on to the broker while A runs
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.Group != group || aDone.Load() {
			return nil, nil, false
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
			return refusalByID(req, kerr.RebalanceInProgress.Code), nil, true
		}
		commits = append(commits, line)
		return nil, nil, false
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
