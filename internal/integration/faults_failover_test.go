package integration

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFaultBrokerFailover: on a three-node cluster, every partition's
// leadership and the group's coordinator move to other nodes twice while
// records are processed (partitions are held at 1000 and 2000 until the
// group committed there, and each move happens in between). The old
// leader answers fetches NOT_LEADER_FOR_PARTITION and the old
// coordinator answers NOT_COORDINATOR, as Kafka's do after a failover;
// librdkafka follows the metadata. Nothing is lost or revoked, every
// record is processed exactly once, and the group commits the high
// watermarks. (kfake keeps the group's state across the move, as Kafka's
// new coordinator loads it from __consumer_offsets.) The same on Apache
// Kafka, with nodes really stopped and killed, is
// TestBrokerNodesStopAndCrash.
func TestFaultBrokerFailover(t *testing.T) {
	t.Parallel()
	const parts, perPartition, nodes = 4, 3000, 3
	b := kafkatest.NewKfake(t, kafkatest.WithNodes(nodes))
	const topic, group = "ffo", "ffo-g"
	b.CreateTopic(t, topic, parts)
	b.Fill(t, topic, perPartition, 16)
	hw := b.HighWatermarks(t, topic)
	seen := newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}
	watch := watchCommits(t, b, group, topic, seen)

	first, second := newGate(), newGate()
	obs := newCommitLog(b, group, topic)
	a := startMember(t, "A", newSourceWith(t, b, group, topic, "A", 50*time.Millisecond, nil),
		countingBuilder("A", es, seen, gates{1000: first, 2000: second}),
		pipeline.WithHooks(obs), pipeline.WithDrainTimeout(5*time.Second))

	c := b.Cluster()
	move := func() {
		t.Helper()
		for p := range int32(parts) {
			to := (c.LeaderFor(topic, p) + 1) % nodes
			if err := c.MoveTopicPartition(topic, p, to); err != nil {
				t.Fatalf("move partition %d to node %d: %v", p, to, err)
			}
		}
		was := c.CoordinatorFor(group)
		for range 100 { // a rehash picks another node with probability 2/3
			if c.RehashCoordinators(); c.CoordinatorFor(group) != was {
				return
			}
		}
		t.Fatalf("the coordinator of %s stayed on node %d through 100 rehashes", group, was)
	}
	for i, g := range []*gate{first, second} {
		held := int64(1000 * (i + 1))
		waitGroupAt(t, b, group, topic, uniform(parts, held), a)
		move()
		g.open()
	}
	waitGroupAt(t, b, group, topic, hw, a)
	checkCommittedEquals(t, b, group, topic, hw)
	a.stillRunning(t, "the failovers")
	lost, revoked := obs.groupObserver.lost.Load(), obs.revoked.Load()
	a.stopClean(t)

	watch.check(t)
	es.check(t)
	seen.checkTimes(t, func(int32, int64) int32 { return 1 })
	if lost != 0 || revoked != 0 {
		t.Errorf("%d partitions lost and %d revoked, want none", lost, revoked)
	}
	checkCommittedEquals(t, b, group, topic, hw)
	watch.logIfFailed(t)
}
