package integration

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestBrokerNodesStopAndCrash: on a three-node Apache Kafka cluster
// (internal topics and the test's topic replicated three times, two in
// sync required for the coordinators' topics), the consumer runs while
// one node after another leaves: node 1 with a controlled shutdown
// (SIGTERM), node 2 killed (SIGKILL), each brought back before the next
// goes. Partition leaders and the group's coordinator move; the client
// follows metadata. Nothing is lost, the committed offsets reach the high
// watermarks exactly, every record is processed, and processed once
// unless the member lost or gave up a partition on the way.
func TestBrokerNodesStopAndCrash(t *testing.T) {
	if k, _ := kafkatest.KindFromEnv(); k != kafkatest.Apache {
		t.Skip("stops and kills broker processes: Apache Kafka only (SLUICE_TEST_BROKER=apache); on kfake TestFaultBrokerFailover moves leadership instead")
	}
	const parts, perPartition, nodes = 4, 3000, 3
	b := kafkatest.NewBroker(t, kafkatest.WithNodes(nodes))
	const topic, group = "nodes", "nodes-g"
	_, hw := fillTopic(t, b, topic, parts, perPartition)
	seen := newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}

	first, second := newGate(), newGate()
	obs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", newSourceWith(t, b, group, topic, "A", 50*time.Millisecond, nil),
		countingBuilder("A", es, seen, gates{1000: first, 2000: second}),
		pipeline.WithHooks(obs), pipeline.WithDrainTimeout(5*time.Second))

	outage := func(node int, graceful bool) {
		t.Helper()
		var err error
		if graceful {
			err = b.StopNode(node)
		} else {
			err = b.KillNode(node)
		}
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := b.StartNode(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range []*gate{first, second} {
		held := int64(1000 * (i + 1))
		waitGroupAt(t, b, group, topic, uniform(parts, held), a)
		outage(i+1, i == 0)
		g.open()
	}
	waitGroupAt(t, b, group, topic, hw, a)
	checkCommittedEquals(t, b, group, topic, hw)
	a.stillRunning(t, "the node outages")
	lost, revoked := obs.groupObserver.lost.Load(), obs.revoked.Load()
	a.stop(t)

	es.check(t)
	if lost == 0 && revoked == 0 {
		seen.checkTimes(t, func(int32, int64) int32 { return 1 })
	} else {
		t.Logf("%d partitions lost and %d revoked during the outages: records after the last commit may run twice", lost, revoked)
		seen.check(t)
	}
	checkCommittedEquals(t, b, group, topic, hw)
}
