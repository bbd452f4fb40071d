package franz_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Broker faults (kfake ControlKey on Produce) on the output or dead-letter
// topic. kfake answers a faulted REQUEST_TIMED_OUT produce after
// appending the records (as a real broker may) and deduplicates the
// idempotent producer's retry by its sequence numbers, as Kafka does.

// faultCase is one way of writing the input to Kafka: to an output topic
// with franz.Produce, or only its invalid records to a dead-letter topic.
type faultCase struct {
	name  string
	topic string                     // where the faults are injected
	wants func(pipeline.Record) bool // whether an input record has a message in topic
	build func(p *franz.Producer) (pipeline.Builder, []pipeline.Option)
}

var faultCases = []faultCase{
	{
		name: "produce", topic: "out",
		wants: func(pipeline.Record) bool { return true },
		build: func(p *franz.Producer) (pipeline.Builder, []pipeline.Option) { return produceTo(p, "out"), nil },
	},
	{
		name: "dead letters", topic: "dlq",
		wants: func(r pipeline.Record) bool { return r.Offset%7 == 3 },
		build: func(p *franz.Producer) (pipeline.Builder, []pipeline.Option) {
			return dlqBuilder, []pipeline.Option{pipeline.WithDeadLetter(p.DeadLetter("dlq"))}
		},
	},
}

// A retriable fault answering a few produce requests, then clearing: kgo
// retries, nothing is lost or duplicated, the commits reach exactly the
// end of the input and Run keeps going.
func TestTransientProduceFaults(t *testing.T) {
	t.Parallel()
	const parts, n, faults = 2, 100, 5
	for _, fault := range []*kerr.Error{kerr.NotLeaderForPartition, kerr.RequestTimedOut} {
		for _, fc := range faultCases {
			t.Run(fmt.Sprintf("%s/%s", fc.name, fault.Message), func(t *testing.T) {
				t.Parallel()
				b := kafkatest.NewKfake(t)
				b.CreateTopic(t, "in", parts)
				b.CreateTopic(t, fc.topic, 1)
				b.Produce(t, "in", input(parts, 0, n)...)
				in := b.ReadAll(t, "in")
				p := newProducer(t, b)
				h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: fault, Count: faults})
				build, opts := fc.build(p)
				r := testkit.Start(t, newSource(t, b, "g", "in"), build, opts...)

				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				if err := h.Wait(ctx, faults); err != nil {
					t.Fatalf("waiting for %d faulted produce requests: %v", faults, err)
				}
				waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
				stop(t, r)
				stored := map[string]int{}
				for _, rec := range b.ReadAll(t, fc.topic) {
					stored[string(rec.Key)]++
				}
				want := 0
				for _, rec := range in {
					if fc.wants(rec) {
						want++
						if stored[string(rec.Key)] != 1 {
							t.Errorf("in/%d@%d has %d messages in %s, want 1", rec.Partition, rec.Offset, stored[string(rec.Key)], fc.topic)
						}
					}
				}
				if got := len(b.ReadAll(t, fc.topic)); got != want {
					t.Errorf("%d messages in %s, want %d", got, fc.topic, want)
				}
			})
		}
	}
}

// A retriable fault that never clears: each delivery fails at the
// delivery timeout. The dead-letter destination retries (the policy's
// two attempts) and the Produce stage fails at once; either way Run stops
// with a StageError at the first affected record naming the topic and
// the timeout, and commits stay exactly below it.
func TestPersistentProduceFaultStopsRun(t *testing.T) {
	t.Parallel()
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			const n = 20
			b := kafkatest.NewKfake(t)
			b.CreateTopic(t, "in", 1)
			b.CreateTopic(t, fc.topic, 1)
			b.Produce(t, "in", input(1, 0, n)...)
			p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs(), DeliveryTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: kerr.NotLeaderForPartition, Count: -1})
			build, opts := fc.build(p)
			var obs retries
			opts = append(opts, pipeline.WithHooks(&obs), pipeline.WithRetry(pipeline.RetryPolicy{Attempts: 2, Initial: 10 * time.Millisecond}))
			r := testkit.Start(t, newSource(t, b, "g", "in"), build, opts...)
			err = r.Wait(t)
			first, wantRetries, names := int64(0), int64(0), "delivery to out failed"
			if fc.topic == "dlq" {
				first, wantRetries, names = 3, 1, "dead letter to dlq"
			}
			var se *pipeline.StageError
			if !errors.As(err, &se) || se.Offset != first || !strings.Contains(err.Error(), names) ||
				!strings.Contains(err.Error(), "not delivered within the delivery timeout (300ms)") {
				t.Errorf("Run = %v, want a StageError at in/0@%d naming %q and the timeout", err, first, names)
			}
			if got := obs.n.Load(); got != wantRetries {
				t.Errorf("%d retries, want %d", got, wantRetries)
			}
			if c := b.Committed(t, "g", "in"); len(c) > 1 || c[0] > first {
				t.Errorf("committed %v, want at most {0: %d}", c, first)
			}
		})
	}
}
