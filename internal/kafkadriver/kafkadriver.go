// Package kafkadriver runs testkit/sourcetest against a Kafka source (the
// librdkafka one, the franz one, in classic or KIP-848 groups) on a
// kafkatest broker: a [Driver] is the suite's Driver and Evicter, and a
// test of a source is one call:
//
//	sourcetest.Run(t, kafkadriver.Driver{Broker: b, Source: newSource})
//
// It also holds what both clients' tests check alike of their
// constructors (WantConfigErrors).
package kafkadriver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// Driver is a [sourcetest.Driver] and [sourcetest.Evicter] whose topics
// and groups live on Broker.
type Driver struct {
	// Broker holds the topics and the groups.
	Broker *kafkatest.Broker

	// Source returns the source under test, consuming topic as a member
	// of group on Broker.
	Source func(t *testing.T, group, topic string) sluice.Source

	// ReadingCommits, when set, is called with the group before each
	// read of its commits (Committed), while the group may still run:
	// for checks of the group itself, such as its protocol.
	ReadingCommits func(t *testing.T, group string)
}

var _ sourcetest.Evicter = Driver{}

// CreateTopic creates topic on the broker.
func (d Driver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.Broker.CreateTopic(t, topic, partitions)
}

// Produce appends recs to topic on the broker.
func (d Driver) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	d.Broker.Produce(t, topic, recs...)
}

// NewSource returns Source(t, group, topic).
func (d Driver) NewSource(t *testing.T, group, topic string) sluice.Source {
	return d.Source(t, group, topic)
}

// Committed returns what group committed on topic, after ReadingCommits.
func (d Driver) Committed(t *testing.T, group, topic string) map[int32]int64 {
	if d.ReadingCommits != nil {
		d.ReadingCommits(t, group)
	}
	return d.Broker.Committed(t, group, topic)
}

// Evict makes the coordinator refuse the group's members until readmit,
// in either protocol: classic heartbeats are answered ILLEGAL_GENERATION
// (librdkafka reports the assignment lost, kgo calls OnPartitionsLost)
// and joins COORDINATOR_LOAD_IN_PROGRESS, so they cannot come back; a
// KIP-848 heartbeat, which is also the join, is answered
// FENCED_MEMBER_EPOCH, on which both clients drop their partitions as
// lost and rejoin with epoch 0, fenced again. It skips t on Apache Kafka,
// which has no such control.
func (d Driver) Evict(t *testing.T, group, _ string) (readmit func()) {
	cluster, ok := d.Broker.Kfake()
	if !ok {
		t.Skip("evicting a member takes kfake's fault injection (rejected heartbeats and joins); Apache Kafka has no such control")
	}
	faults := cluster.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.ConsumerGroupHeartbeat}, Group: group, Err: kerr.FencedMemberEpoch, Count: -1},
	)
	t.Cleanup(faults.Remove)
	return faults.Remove
}
