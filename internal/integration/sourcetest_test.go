package integration

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// kafkaDriver runs the source conformance suite against source.Kafka on
// the embedded broker.
type kafkaDriver struct{ b *testkit.Broker }

func (d kafkaDriver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.b.CreateTopic(t, topic, partitions)
}

func (d kafkaDriver) Produce(t *testing.T, topic string, recs ...pipeline.Record) {
	d.b.Produce(t, topic, recs...)
}

func (d kafkaDriver) NewSource(t *testing.T, group, topic string) pipeline.Source {
	return newSource(t, d.b, group, topic, nil)
}

func (d kafkaDriver) Committed(t *testing.T, group, topic string) map[int32]int64 {
	return d.b.Committed(t, group, topic)
}

// Evict makes the coordinator reject the group's heartbeats, so that
// librdkafka reports its assignment lost (as TestCrashedMemberIsReplaced
// does), and its joins, so that it cannot come back until readmit.
func (d kafkaDriver) Evict(t *testing.T, group, _ string) (readmit func()) {
	faults := d.b.Cluster().Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
	)
	t.Cleanup(faults.Remove)
	return faults.Remove
}

var _ sourcetest.Evicter = kafkaDriver{}

func TestKafkaSourceConformance(t *testing.T) {
	sourcetest.Run(t, kafkaDriver{testkit.NewBroker(t)})
}
