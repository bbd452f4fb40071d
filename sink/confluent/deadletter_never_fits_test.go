package confluent_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka refuses a message larger than queue.buffering.max.kbytes
// with its queue-full error even when nothing is queued, so the dead
// letter of such a record (consumed, and below message.max.bytes) waits
// for room that never comes, until its partition's context ends. The
// Produce stages of the same producer can do nothing for it: in/0's
// records are produced and committed meanwhile.
func TestStagesGoOnWhileADeadLetterNeverFitsLibrdkafkasQueue(t *testing.T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 1)
	b.CreateTopic(t, "dlq", 1)
	p := newProducer(t, b, map[string]any{"queue.buffering.max.kbytes": 1})
	build := func(part *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		if part.Partition == 0 {
			return sink.Produce(in, p, "out", toMsg)
		}
		return producertest.AllInvalid(part, in)
	}
	// in/0's records are produced once the dead letter's call started:
	// its first Send, refused, comes long before the source fetches them.
	called := make(chan struct{})
	var once sync.Once
	dl := p.DeadLetter("dlq")
	deadLetter := func(ctx context.Context, d sluice.DeadLetter) error {
		once.Do(func() { close(called) })
		return dl(ctx, d)
	}
	b.Produce(t, "in", sluice.Record{Partition: 1, Value: bytes.Repeat([]byte("x"), 4096)})
	r := start(t, newSource(t, b.Addrs(), "g", "in"), build,
		pipeline.WithDeadLetter(deadLetter), pipeline.WithDrainTimeout(2*time.Second), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
	select {
	case <-called:
	case <-time.After(time.Minute):
		t.Fatal("in/1's dead letter was not called within a minute")
	}
	b.Produce(t, "in", sluice.Record{Partition: 0, Value: []byte("v0")}, sluice.Record{Partition: 0, Value: []byte("v1")}, sluice.Record{Partition: 0, Value: []byte("v2")})
	deadline := time.Now().Add(10 * time.Second)
	var committed map[int32]int64
	for time.Now().Before(deadline) {
		committed = b.Committed(t, "g", "in")
		if committed[0] == 3 {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the broker's committed offsets, bounded by deadline
	}
	if committed[0] != 3 {
		t.Errorf("10s after in/1's dead letter started waiting, in/0 committed %v, want 3 (v0, v1 and v2 fit librdkafka's queue)", committed)
	}
	if n := len(b.ReadAll(t, "out")); n != 3 {
		t.Errorf("out holds %d records, want 3", n)
	}
	_ = r.Stop(t) // in/1's dead letter ends with the drain, undelivered
}
