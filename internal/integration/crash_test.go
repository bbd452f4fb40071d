package integration

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// lossObserver snapshots the group's commits when the consumer first
// loses a partition, and closes lost.
type lossObserver struct {
	*groupObserver
	b            *kafkatest.Broker
	group, topic string
	once         sync.Once
	lost         chan struct{}
	atLoss       map[int32]int64

	mu sync.Mutex
	// afterLoss: successful commits reported after the loss. The source
	// sends nothing of a lost partition any more, but a commit it sent
	// before the loss may be answered after it (the source waits for it
	// before letting the client go).
	afterLoss [][]sluice.Offset
}

func (o *lossObserver) OnCommitted(offs []sluice.Offset, _ time.Duration, err error) {
	select {
	case <-o.lost:
	default:
		return
	}
	if err == nil && len(offs) > 0 {
		o.mu.Lock()
		o.afterLoss = append(o.afterLoss, offs)
		o.mu.Unlock()
	}
}

// checkNoCommitAfterLoss checks the group's commits once A stopped: they
// are those at the loss, or those the one commit answered after the loss
// (sent before it) set. It returns them: where the next owner starts.
func (o *lossObserver) checkNoCommitAfterLoss(t *testing.T, got map[int32]int64) map[int32]int64 {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if maps.Equal(got, o.atLoss) {
		return got
	}
	if len(o.afterLoss) == 1 {
		want := maps.Clone(o.atLoss)
		for _, off := range o.afterLoss[0] {
			if off.Topic == o.topic {
				want[off.Partition] = off.Next
			}
		}
		if maps.Equal(got, want) {
			t.Logf("a commit sent before the loss was answered after it: %v at the loss, %v after", o.atLoss, got)
			return got
		}
	}
	t.Errorf("A committed after losing its partitions: %v at the loss, %v after A stopped (commits answered after the loss: %v)", o.atLoss, got, o.afterLoss)
	return got
}

func (o *lossObserver) OnPartitionLost(tp sluice.TopicPartition) {
	o.groupObserver.OnPartitionLost(tp)
	o.once.Do(func() {
		o.atLoss = committedNow(o.b, o.group, o.topic)
		close(o.lost)
	})
}

// TestCrashedMemberIsReplaced: consumer A is thrown out of the group in
// the middle of the stream, the way a crashed or partitioned process is,
// then stopped: the coordinator rejects its heartbeats with
// ILLEGAL_GENERATION (librdkafka reports its assignment lost, kgo calls
// OnPartitionsLost) and its joins, so it cannot rejoin. A commits nothing
// after the loss. Consumer B then processes exactly [A's last commit, high
// watermark): nothing is lost, what A processed without committing is
// processed again (counted), every ownership of B starts exactly at the
// commit A left, and the group ends at the high watermarks. It runs on
// both sources.
func TestCrashedMemberIsReplaced(t *testing.T) {
	// B joins once the coordinator expired A's session (A's leave may be
	// lost with its joins faulted): keep that short.
	t.Run("librdkafka", func(t *testing.T) {
		t.Parallel()
		crashedMemberIsReplaced(t, func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			return newSource(t, b, group, topic, map[string]any{"session.timeout.ms": 2000})
		})
	})
	t.Run("franz", func(t *testing.T) {
		t.Parallel()
		crashedMemberIsReplaced(t, func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			return newFranzSource(t, b, group, topic, kgo.SessionTimeout(2*time.Second))
		})
	})
}

// newMemberSource returns a source of one member of group on topic.
type newMemberSource func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source

func crashedMemberIsReplaced(t *testing.T, newSrc newMemberSource) {
	const parts, perPartition = 4, 10_000
	b := kafkatest.NewKfake(t)
	const topic, group = "crash", "crash-g"
	total, hw := fillTopic(t, b, topic, parts, perPartition)
	all, byA, byB := newOffsets(hw), newOffsets(hw), newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}

	builder := func(name string, mine *offsets) pipeline.Builder {
		return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			e := es.begin(name, p.Partition)
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if name == "A" && r.Offset%2 == 0 {
					time.Sleep(time.Millisecond) // work: keeps A mid-stream when it is thrown out
				}
				e.record(r.Offset)
				mine.add(r.Partition, r.Offset)
				all.add(r.Partition, r.Offset)
				return nil
			})
		}
	}

	aObs := &lossObserver{groupObserver: newGroupObserver(), b: b, group: group, topic: topic, lost: make(chan struct{})}
	a := startConsumer(t, "A", newSrc(t, b, group, topic), builder("A", byA), pipeline.WithHooks(aObs))
	waitFor(t, "A processing and committing on every partition", func() bool {
		c := b.Committed(t, group, topic)
		return all.total.Load() >= int64(total/5) && len(c) == parts
	}, a)

	// From now on the coordinator rejects the group's heartbeats (A's
	// assignment is lost) and its joins (A cannot come back).
	faults := b.Cluster().Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
	)
	select {
	case <-aObs.lost:
	case <-a.Done():
		t.Fatalf("A stopped before losing its partitions: %v", a.Err())
	case <-time.After(wait):
		t.Fatalf("A did not lose its partitions within %v", wait)
	}
	processedByA := byA.total.Load()
	stopping := time.Now()
	a.stop(t)
	faults.Remove()
	t.Logf("A stopped in %v; assigned %d, lost %d", time.Since(stopping), aObs.assigned.Load(), aObs.groupObserver.lost.Load())
	final := aObs.checkNoCommitAfterLoss(t, b.Committed(t, group, topic))
	if n := aObs.revoked.Load(); n != 0 {
		t.Errorf("A revoked %d partitions gracefully; it should only have lost them", n)
	}
	t.Logf("A lost its partitions after processing %d records (%d by the time it stopped); committed at the loss: %v",
		processedByA, byA.total.Load(), aObs.atLoss)

	bObs := newGroupObserver()
	bStart := time.Now()
	bc := startConsumer(t, "B", newSrc(t, b, group, topic), builder("B", byB), pipeline.WithHooks(bObs))
	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, bc)
	t.Logf("B joined in %v", time.Since(bStart))
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	t.Logf("B done in %v", time.Since(bStart))
	bc.stop(t)

	if dups := all.check(t); dups > 0 {
		t.Logf("%d records processed by A after its last commit were processed again by B", dups)
	}
	es.check(t) // B's every partition starts exactly at the commit A left
	for p, h := range hw {
		from := final[p]
		for off := range h {
			want := int32(0)
			if off >= from {
				want = 1
			}
			if n := byB.n[p][off].Load(); n != want {
				t.Fatalf("partition %d offset %d processed %d times by B, want %d (A's last commit: %d)", p, off, n, want, from)
			}
		}
	}
	if n := bObs.lost.Load(); n != 0 {
		t.Errorf("B lost %d partitions", n)
	}
	checkCommittedEquals(t, b, group, topic, hw)
}
