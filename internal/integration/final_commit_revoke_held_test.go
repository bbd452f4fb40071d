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
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.MemberID != aID {
			return nil, nil, false
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
			return refusal(req, kerr.IllegalGeneration.Code), nil, true
		case hold:
			aCommits = append(aCommits, line+" (held until A's Run returned)")
			mu.Unlock()
			b.Cluster().SleepControl(func() { <-release })
			mu.Lock()
			return nil, nil, false
		}
		aCommits = append(aCommits, line)
		return nil, nil, false
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

// processedPer returns how many records o counted per partition,
// repeats included.
func processedPer(o *offsets) map[int32]int64 {
	out := make(map[int32]int64, len(o.n))
	for p, cs := range o.n {
		for i := range cs {
			out[p] += int64(cs[i].Load())
		}
	}
	return out
}
