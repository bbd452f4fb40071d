package sink_test

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

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Broker faults on the produce requests of the output or dead-letter
// topic. kfake answers a faulted REQUEST_TIMED_OUT produce after appending
// the records (as a real broker may), and deduplicates the idempotent
// producer's retry by its sequence numbers, as Kafka does: so even then
// every output is stored exactly once.

// faultCase is one way of writing the input to Kafka: to an output topic
// with sink.Produce, or only its invalid records to a dead-letter topic.
type faultCase struct {
	name  string
	topic string                     // where the faults are injected
	wants func(pipeline.Record) bool // whether an input record has a message in topic
	build func(p *sink.Producer) (pipeline.Builder, []pipeline.Option)
}

var faultCases = []faultCase{
	{
		name: "produce", topic: "out",
		wants: func(pipeline.Record) bool { return true },
		build: func(p *sink.Producer) (pipeline.Builder, []pipeline.Option) {
			return func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
				return sink.Produce(s, p, "out", toMsg)
			}, nil
		},
	},
	{
		name: "dead letters", topic: "dlq",
		wants: func(r pipeline.Record) bool { return r.Offset%7 == 3 },
		build: func(p *sink.Producer) (pipeline.Builder, []pipeline.Option) {
			return dlqBuilder, []pipeline.Option{pipeline.WithDeadLetter(p.DeadLetter("dlq"))}
		},
	},
}

// checkCommittedStored fails the test unless every input record below
// the group's committed offsets that should have a message in topic has
// exactly one there (each output carries its input's key). Commits are
// read first: a commit never runs ahead of a delivery.
func checkCommittedStored(t *testing.T, b *kafkatest.Broker, in []pipeline.Record, fc faultCase) {
	t.Helper()
	committed := b.Committed(t, "g", "in")
	stored := map[string]int{}
	for _, r := range b.ReadAll(t, fc.topic) {
		stored[string(r.Key)]++
	}
	for _, r := range in {
		if c, ok := committed[r.Partition]; ok && r.Offset < c && fc.wants(r) && stored[string(r.Key)] != 1 {
			t.Errorf("in/%d@%d committed (at %d) with %d messages in %s, want 1", r.Partition, r.Offset, c, stored[string(r.Key)], fc.topic)
		}
	}
}

// A retriable fault answering a few produce requests, then clearing:
// librdkafka retries, nothing is lost or duplicated, nothing is committed
// before it is stored, the commits reach the end of the input and Run
// keeps going.
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
				p := newProducer(t, b, map[string]any{"retry.backoff.ms": 20, "retry.backoff.max.ms": 50})
				h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: fault, Count: faults})
				build, opts := fc.build(p)
				r := start(t, newSource(t, b, "g", "in"), build, opts...)

				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				if err := h.Wait(ctx, faults); err != nil {
					t.Fatalf("waiting for %d faulted produce requests: %v", faults, err)
				}
				checkCommittedStored(t, b, in, fc)
				waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
				stop(t, r)
				checkCommittedStored(t, b, in, fc) // everything, exactly once
				want := 0
				for _, rec := range in {
					if fc.wants(rec) {
						want++
					}
				}
				if got := len(b.ReadAll(t, fc.topic)); got != want {
					t.Errorf("%d messages in %s, want %d", got, fc.topic, want)
				}
			})
		}
	}
}

// A retriable fault that never clears: each delivery times out after
// message.timeout.ms. The dead-letter destination retries (the policy's
// two attempts) and the Produce stage fails at once; either way Run stops
// with a StageError at the first affected record naming the timeout, and
// commits stay below it.
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
			p := newProducer(t, b, map[string]any{"message.timeout.ms": 300, "retry.backoff.ms": 20, "retry.backoff.max.ms": 50})
			b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: kerr.NotLeaderForPartition, Count: -1})
			build, opts := fc.build(p)
			var obs retries
			opts = append(opts, pipeline.WithHooks(&obs), pipeline.WithRetry(pipeline.RetryPolicy{Attempts: 2, Initial: 10 * time.Millisecond}))
			r := start(t, newSource(t, b, "g", "in"), build, opts...)
			err := r.Wait(t)
			// The first record with a message in fc.topic, and the retries:
			// a timed-out dead letter is transient, a Produce stage's
			// delivery failure is final (librdkafka retried already).
			first, wantRetries := int64(0), int64(0)
			if fc.topic == "dlq" {
				first, wantRetries = 3, 1
			}
			var se *pipeline.StageError
			if !errors.As(err, &se) || se.Offset != first || !strings.Contains(err.Error(), "Message timed out") {
				t.Errorf("Run = %v, want a StageError at in/0@%d naming the timeout", err, first)
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
