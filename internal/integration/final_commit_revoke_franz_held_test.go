package integration

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

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
	const parts, perPartition = 4, 200
	const closeTimeout = 3 * time.Second
	r := newFaultRun(t, kafkatest.NewKfake(t), "frevoke-franz-held-"+protocol, parts, perPartition)
	b, group, topic := r.b, r.group, r.topic

	var revokeSeen atomic.Bool
	a := startAOwning(t, r, newFranzA(t, r, closeTimeout, revokeWatchLogger(t, &revokeSeen), protoOpts...), parts)

	var armed, aDone, heldOnce atomic.Bool
	refused := make(chan struct{})
	var refusedOnce sync.Once
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld)
	var mu sync.Mutex
	var commits []string
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.Group != group || aDone.Load() {
			return nil, nil, false
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
			return refusalByID(req, kerr.RebalanceInProgress.Code), nil, true
		}
		if hold {
			b.Cluster().SleepControl(func() { <-release })
		}
		return nil, nil, false
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
