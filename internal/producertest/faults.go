package producertest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Broker faults (kfake ControlKey on Produce) on the output or dead-letter
// topic. kfake answers a faulted REQUEST_TIMED_OUT produce after appending
// the records (as a real broker may) and deduplicates the idempotent
// producer's retry by its sequence numbers, as Kafka does: so even then
// every output is stored exactly once.

// faultCase is one way of writing the input to Kafka: to an output topic
// with the Produce stage, or only its invalid records to a dead-letter
// topic.
type faultCase[P sink.Producer] struct {
	name  string
	topic string                   // where the faults are injected
	wants func(sluice.Record) bool // whether an input record has a message in topic
	build func(s *suite[P], p P) (pipeline.Builder, []pipeline.Option)
}

func faultCases[P sink.Producer]() []faultCase[P] {
	return []faultCase[P]{
		{
			name: "produce", topic: "out",
			wants: func(sluice.Record) bool { return true },
			build: func(s *suite[P], p P) (pipeline.Builder, []pipeline.Option) { return s.produceTo(p, "out"), nil },
		},
		{
			name: "dead letters", topic: "dlq",
			wants: func(r sluice.Record) bool { return r.Offset%7 == 3 },
			build: func(s *suite[P], p P) (pipeline.Builder, []pipeline.Option) {
				return dlqBuilder, []pipeline.Option{pipeline.WithDeadLetter(p.DeadLetter("dlq"))}
			},
		},
	}
}

// checkCommittedStored fails the test unless every input record below
// the group's committed offsets that should have a message in topic has
// exactly one there (each output carries its input's key). Commits are
// read first: a commit never runs ahead of a delivery.
func checkCommittedStored(t *T, b *kafkatest.Broker, in []sluice.Record, topic string, wants func(sluice.Record) bool) {
	t.Helper()
	committed := b.Committed(t, "g", "in")
	stored := map[string]int{}
	for _, r := range b.ReadAll(t, topic) {
		stored[string(r.Key)]++
	}
	for _, r := range in {
		if c, ok := committed[r.Partition]; ok && r.Offset < c && wants(r) && stored[string(r.Key)] != 1 {
			t.Errorf("in/%d@%d committed (at %d) with %d messages in %s, want 1", r.Partition, r.Offset, c, stored[string(r.Key)], topic)
		}
	}
}

// transientFaults: a retriable fault answering a few produce requests,
// then clearing: the client retries, nothing is lost or duplicated,
// nothing is committed before it is stored, the commits reach exactly the
// end of the input and Run keeps going.
func (s *suite[P]) transientFaults(t *T, fc faultCase[P], fault *kerr.Error) {
	const parts, n, faults = 2, 100, 5
	b := kafkatest.NewKfake(t)
	p := s.setUp(t, b, parts, n, fc.topic, 1)
	in := b.ReadAll(t, "in")
	h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: fault, Count: faults})
	build, opts := fc.build(s, p)
	r := s.start(t, b, build, opts...)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.Wait(ctx, faults); err != nil {
		t.Fatalf("waiting for %d faulted produce requests: %v", faults, err)
	}
	checkCommittedStored(t, b, in, fc.topic, fc.wants)
	WaitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
	Stop(t, r)
	checkCommittedStored(t, b, in, fc.topic, fc.wants) // everything, exactly once
	want := 0
	for _, rec := range in {
		if fc.wants(rec) {
			want++
		}
	}
	if got := len(b.ReadAll(t, fc.topic)); got != want {
		t.Errorf("%d messages in %s, want %d", got, fc.topic, want)
	}
}

// persistentFault: a retriable fault that never clears: each delivery
// fails at the delivery timeout. The dead-letter destination retries (the
// policy's two attempts: a timed-out dead letter is transient) and the
// Produce stage fails at once (its client retried already); either way
// Run stops with a StageError at the first affected record naming the
// topic and the timeout, and commits stay at or below it.
func (s *suite[P]) persistentFault(t *T, fc faultCase[P]) {
	const n, timeout = 20, 300 * time.Millisecond
	b := kafkatest.NewKfake(t)
	createTopics(t, b, 1, n, fc.topic, 1)
	p := s.newProducer(t, Config{Brokers: b.Addrs(), DeliveryTimeout: timeout, FastRetries: true})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: fc.topic, Err: kerr.NotLeaderForPartition, Count: -1})
	build, opts := fc.build(s, p)
	var obs retries
	opts = append(opts, pipeline.WithHooks(&obs), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2, Initial: 10 * time.Millisecond}))
	r := s.start(t, b, build, opts...)
	err := r.Wait(t)
	first, wantRetries, names := int64(0), int64(0), "delivery to out failed"
	if fc.topic == "dlq" {
		first, wantRetries, names = 3, 1, "dead letter to dlq"
	}
	timedOut := s.h.Errors.TimedOut(timeout)
	var se *sluice.StageError
	if !errors.As(err, &se) || se.Offset != first || !strings.Contains(err.Error(), names) || !strings.Contains(err.Error(), timedOut) {
		t.Errorf("Run = %v, want a StageError at in/0@%d naming %q and the timeout (%q)", err, first, names, timedOut)
	}
	if got := obs.n.Load(); got != wantRetries {
		t.Errorf("%d retries, want %d", got, wantRetries)
	}
	if c := b.Committed(t, "g", "in"); len(c) > 1 || c[0] > first {
		t.Errorf("committed %v, want at most {0: %d}", c, first)
	}
}
