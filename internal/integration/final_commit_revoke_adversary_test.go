package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFinalCommitRevokeCommitHeldPartitionsMoving is
// TestFinalCommitIllegalGenerationPartitionsMoving with the commit A
// sends in the revoke (the partitions B takes, revoked while A's final
// commit waits to be retried) held unanswered at the broker until A's
// Run returned. The partitions A keeps must still have their final
// offsets committed by A's final commit, and Run must return nil: before
// a revoke while stopping committed anything, the retry committed them.
// B must process again at most the records of the partitions it was
// given (whose commit was held), never those of the partitions A kept.
func TestFinalCommitRevokeCommitHeldPartitionsMoving(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 200
	r := newFaultRun(t, kafkatest.NewKfake(t), "fgen-moving-held", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw
	classic := map[string]any{"heartbeat.interval.ms": 100, "session.timeout.ms": 20000}

	log := newSentLog(t, "OffsetCommit")
	aObs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", newWatchedSource(t, b, group, topic, "A", log, classic),
		countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	aID := memberID(t, b, group, "A")

	bObs := newCommitLog(b, group, topic)
	var mu sync.Mutex
	var aCommits []string
	inRevoke := map[int32]bool{} // the partitions of the held commit: those revoked for B
	var armed atomic.Bool
	var n atomic.Int32
	refused := make(chan struct{})
	heldCommit := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld)
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := r.(*kmsg.OffsetCommitRequest)
		if !armed.Load() || req.MemberID != aID {
			return nil, nil, false
		}
		i := n.Add(1)
		line := fmt.Sprintf("gen %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
			}
		}
		switch i {
		case 1:
			line += " (answered ILLEGAL_GENERATION)"
		case 2:
			line += " (held until A's Run returned)"
		}
		mu.Lock()
		aCommits = append(aCommits, line)
		mu.Unlock()
		switch i {
		case 1:
			close(refused)
			return refusal(req, kerr.IllegalGeneration.Code), nil, true
		case 2:
			mu.Lock()
			for _, rt := range req.Topics {
				for _, rp := range rt.Partitions {
					inRevoke[rp.Partition] = true
				}
			}
			mu.Unlock()
			close(heldCommit)
			b.Cluster().SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	held, unhold := holdJoin(t, b, aID, &armed)

	armed.Store(true)
	bSeen := newOffsets(hw)
	bc := startConsumer(t, "B", newSourceWith(t, b, group, topic, "B", 50*time.Millisecond, nil),
		countingBuilder("B", r.es, bSeen, nil), pipeline.WithHooks(bObs))
	waitChan(t, held, "A's JoinGroup for B's rebalance", a, bc)

	releaseWhenSent(log, a, unhold)
	go func() {
		<-a.Done()
		releaseHeld()
	}()
	took, err := a.stopTimed(t)
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	select {
	case <-refused:
	default:
		t.Fatalf("no commit of A was answered ILLEGAL_GENERATION: the scenario did not happen")
	}
	select {
	case <-heldCommit:
	default:
		t.Fatalf("no second commit of A reached the broker: the scenario did not happen")
	}
	bByPart := processedPer(bSeen)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("A stopped in %v: Run = %v; A's commits at the broker: %q; B processed per partition %v", took, err, aCommits, bByPart)
	if err != nil {
		t.Errorf("A: Run = %v, want nil", err)
	}
	// The partitions A kept through the rebalance (not in the held
	// commit) were finished by A: its final commit covers them, so B
	// must not process them again.
	for p, got := range bByPart {
		if got > 0 && !inRevoke[p] {
			t.Errorf("B processed %d records of partition %d, which A kept until it left: A's final commit of it never reached the broker", got, p)
		}
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
