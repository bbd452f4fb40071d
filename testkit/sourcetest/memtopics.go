package sourcetest

import (
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
)

// memTopics holds the topics of the in-memory drivers, by name, each as
// its partitions' records.
type memTopics map[string][][]sluice.Record

// memBroker is what the in-memory drivers share: their lock, their topics
// under it, and the [Topics] methods over them.
type memBroker struct {
	mu     sync.Mutex // guards topics and the driver's own state
	topics memTopics
	// produced, when set, is called with mu held after Produce appended
	// records.
	produced func()
}

func newMemBroker() memBroker { return memBroker{topics: memTopics{}} }

// CreateTopic implements Topics.
func (d *memBroker) CreateTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.topics[topic]; ok {
		t.Fatalf("sourcetest: topic %q exists", topic)
	}
	d.topics[topic] = make([][]sluice.Record, partitions)
}

// Produce implements Topics.
func (d *memBroker) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	parts, ok := d.topics[topic]
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
	if d.produced != nil {
		d.produced()
	}
}
