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
	r := newFaultRun(t, kafkatest.NewKfake(t, kafkatest.WithNodes(nodes)), "ffo", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	first, second := newGate(), newGate()
	obs := newCommitLog(b, group, topic)
	a := r.start(t, "A", 50*time.Millisecond, nil, gates{1000: first, 2000: second}, pipeline.WithHooks(obs), pipeline.WithDrainTimeout(5*time.Second))

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
	lost, revoked := stopCountingLosses(t, a, obs)

	r.check(t, once)
	wantNoLoss(t, lost, revoked)
	r.watch.logIfFailed(t)
}
