package sourcetest

import (
	"testing"

	"github.com/sluice-go/sluice"
)

// memTopics holds the topics of the in-memory drivers, by name, each as
// its partitions' records; the driver's lock guards it.
type memTopics map[string][][]sluice.Record

// create implements Topics.CreateTopic.
func (m memTopics) create(t *testing.T, topic string, partitions int32) {
	t.Helper()
	if _, ok := m[topic]; ok {
		t.Fatalf("sourcetest: topic %q exists", topic)
	}
	m[topic] = make([][]sluice.Record, partitions)
}

// produce implements Topics.Produce.
func (m memTopics) produce(t *testing.T, topic string, recs ...sluice.Record) {
	t.Helper()
	parts, ok := m[topic]
	if !ok {
		t.Fatalf("sourcetest: no topic %q", topic)
	}
	for _, r := range recs {
		if r.Partition < 0 || int(r.Partition) >= len(parts) {
			t.Fatalf("sourcetest: %s has no partition %d", topic, r.Partition)
		}
		r.Topic = topic
		r.Offset = int64(len(parts[r.Partition]))
		parts[r.Partition] = append(parts[r.Partition], r)
	}
}
