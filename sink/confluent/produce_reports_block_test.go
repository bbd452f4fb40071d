package confluent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka hands every delivery report to one goroutine per producer,
// which blocks while the report's channel is full. A Produce stage must
// therefore never have more reports outstanding than its channel holds:
// here more reports than the largest channel holds could arrive at once
// (the broker refused the output topic until then) while the stage waits
// for room in the dead-letter queue,
// whose deliveries need that same goroutine. The stage, the dead letters
// and every other user of the producer would wait on each other for good.
func TestProduceReportsNeverBlockTheProducer(t *testing.T) {
	t.Parallel()
	const valid, invalid = produce.MaxReportBuffer + 1000, 4000
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.CreateTopic(t, "dlq", 1)
	b.Produce(t, "in", input(1, 0, valid+invalid)...)
	// linger.ms 0: the 4000 dead letters go one at a time, and 5 ms of
	// linger each would add 20 s to the test.
	p := newProducer(t, b, map[string]any{"retry.backoff.ms": 20, "retry.backoff.max.ms": 50, "linger.ms": 0})
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})
	// The dead letters wait too, so the stage fills the dead-letter queue
	// and waits for room in it.
	refusedDLQ := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dlq", Err: kerr.NotEnoughReplicas, Count: -1})

	sawInvalid := make(chan struct{})
	var once sync.Once
	toMsgOrInvalid := func(r sluice.Record) (sink.Message, error) {
		if r.Offset >= valid {
			once.Do(func() { close(sawInvalid) })
			return sink.Message{}, sluice.Invalid(fmt.Errorf("offset %d", r.Offset))
		}
		return toMsg(r)
	}
	build := func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsgOrInvalid)
	}
	// A partition queue past the stage's bound: only the stage holds the
	// records back.
	r := start(t, newSource(t, b.Addrs(), "g", "in"), build, pipeline.WithDeadLetter(p.DeadLetter("dlq")),
		pipeline.WithPartitionQueue(4*produce.MaxReportBuffer))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := refused.Wait(ctx, 10); err != nil {
		t.Fatalf("waiting for refused produce requests: %v", err)
	}
	// A stage that keeps its reports bounded waits for them before it gets
	// to the invalid records; one that does not is past them by now, its
	// dead letters refused.
	select {
	case <-sawInvalid:
		if err := refusedDLQ.Wait(ctx, 10); err != nil {
			t.Fatalf("waiting for refused dead letters: %v", err)
		}
	case <-time.After(2 * time.Second):
	}
	refused.Remove()
	refusedDLQ.Remove()
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: valid + invalid})
	stop(t, r)
	if out, dlq := b.ReadAll(t, "out"), b.ReadAll(t, "dlq"); len(out) != valid || len(dlq) != invalid {
		t.Errorf("produced %d records and %d dead letters, want %d and %d", len(out), len(dlq), valid, invalid)
	}
}
