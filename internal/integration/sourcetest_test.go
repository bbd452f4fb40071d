package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// kafkaDriver runs the source conformance suite against source.Source on
// the embedded broker; consumer selects KIP-848's consumer group protocol
// (the broker assigns) instead of the classic one.
type kafkaDriver struct {
	b        *kafkatest.Broker
	consumer bool
}

func (d kafkaDriver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.b.CreateTopic(t, topic, partitions)
}

func (d kafkaDriver) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	d.b.Produce(t, topic, recs...)
}

func (d kafkaDriver) NewSource(t *testing.T, group, topic string) sluice.Source {
	if !d.consumer {
		return newSource(t, d.b, group, topic, nil)
	}
	// newSource's heartbeat and session properties are classic-only.
	src, err := source.NewSource(source.Config{
		Brokers:        d.b.Addrs(),
		Group:          group,
		Topics:         []string{topic},
		CommitInterval: 50 * time.Millisecond,
		Logger:         testLogger(t),
		Overrides:      map[string]any{"group.protocol": "consumer"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func (d kafkaDriver) Committed(t *testing.T, group, topic string) map[int32]int64 {
	return d.b.Committed(t, group, topic)
}

// Evict makes the coordinator reject the group's heartbeats, so that
// librdkafka reports its assignment lost (as TestCrashedMemberIsReplaced
// does), and its joins, so that it cannot come back until readmit. Under
// the consumer protocol a heartbeat is also the join: every one is
// answered FENCED_MEMBER_EPOCH, on which librdkafka drops its assignment
// as lost and rejoins.
func (d kafkaDriver) Evict(t *testing.T, group, _ string) (readmit func()) {
	cluster, ok := d.b.Kfake()
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

var _ sourcetest.Evicter = kafkaDriver{}

func TestKafkaSourceConformance(t *testing.T) {
	sourcetest.Run(t, kafkaDriver{b: kafkatest.NewBroker(t)})
}

func TestKafkaSourceConformanceConsumerProtocol(t *testing.T) {
	sourcetest.Run(t, kafkaDriver{b: kafkatest.NewBroker(t), consumer: true})
}
