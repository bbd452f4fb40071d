package franz_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

const wait = 60 * time.Second

// decode marks every record whose offset is 3 mod 7 invalid.
func decode(_ context.Context, r pipeline.Record) (pipeline.Record, error) {
	if r.Offset%7 == 3 {
		return r, pipeline.Invalid(fmt.Errorf("cannot decode offset %d", r.Offset))
	}
	return r, nil
}

func dlqBuilder(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
	return stages.Discard(stages.Map(in, decode, stages.Name("decode")))
}

// Dead letters carry the original key, value, timestamp and headers
// untouched, followed by the sluice.dlq.* headers with exact values; one
// per invalid record, and the input commits exactly to its end.
func TestDeadLetterCarriesRecordAndOrigin(t *testing.T) {
	t.Parallel()
	const parts, n = 2, 50
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", parts)
	b.CreateTopic(t, "dlq", 1)
	b.Produce(t, "in", input(parts, 0, n)...)
	in := b.ReadAll(t, "in")
	p := newProducer(t, b)

	r := testkit.Start(t, newSource(t, b, "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
	stop(t, r)

	var want []pipeline.Record
	for _, rec := range in {
		if rec.Offset%7 == 3 {
			want = append(want, rec)
		}
	}
	got := b.ReadAll(t, "dlq")
	if len(got) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(got), len(want))
	}
	byKey := map[string]pipeline.Record{}
	for _, d := range got {
		byKey[string(d.Key)] = d
	}
	for _, w := range want {
		d, ok := byKey[string(w.Key)]
		if !ok {
			t.Errorf("no dead letter for %d@%d", w.Partition, w.Offset)
			continue
		}
		wantHeaders := append(append([]pipeline.Header(nil), w.Headers...),
			pipeline.Header{Key: pipeline.DeadLetterHeaderTopic, Value: []byte("in")},
			pipeline.Header{Key: pipeline.DeadLetterHeaderPartition, Value: fmt.Appendf(nil, "%d", w.Partition)},
			pipeline.Header{Key: pipeline.DeadLetterHeaderOffset, Value: fmt.Appendf(nil, "%d", w.Offset)},
			pipeline.Header{Key: pipeline.DeadLetterHeaderError, Value: fmt.Appendf(nil, "cannot decode offset %d", w.Offset)},
			pipeline.Header{Key: pipeline.DeadLetterHeaderStage, Value: []byte("decode")},
		)
		if string(d.Value) != string(w.Value) || !d.Timestamp.Equal(w.Timestamp) ||
			headersString(d.Headers) != headersString(wantHeaders) {
			t.Errorf("dead letter of %d@%d: value %q ts %v headers %s\nwant value %q ts %v headers %s",
				w.Partition, w.Offset, d.Value, d.Timestamp, headersString(d.Headers),
				w.Value, w.Timestamp, headersString(wantHeaders))
		}
	}
}

// retries counts the retries Run reports.
type retries struct{ n atomic.Int64 }

func (r *retries) OnStageRetry(string, pipeline.TopicPartition, int, time.Duration, error) {
	r.n.Add(1)
}

// A dead letter that cannot be delivered for a reason retrying cannot fix
// stops Run at once (no retry, although the default policy retries) with
// a StageError at the invalid record that names the cause; the partition
// commits exactly up to it and its dead letter is not stored.
func TestDeadLetterPermanentFailureStopsRun(t *testing.T) {
	t.Parallel()
	const n = 20 // offset 3 is the first invalid record
	for _, tc := range []struct {
		name  string
		opts  []kgo.Opt
		value int // size of the invalid record's value
		topic string
		// skipTopicCheck: the topic is missing on purpose
		skipTopicCheck bool
		setup          func(*testing.T, *kafkatest.Broker, *franz.Producer)
		want           string
	}{
		{name: "closed producer", topic: "dlq", want: "franz: the producer is closed",
			setup: func(t *testing.T, _ *kafkatest.Broker, p *franz.Producer) {
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "message too large", topic: "dlq", opts: []kgo.Opt{kgo.ProducerBatchMaxBytes(1000)}, value: 2000,
			want: "MESSAGE_TOO_LARGE"},
		// kfake, like Kafka with auto.create.topics.enable=false, never
		// creates the topic; kgo gives up after kgo.UnknownTopicRetries.
		// (Without SkipTopicCheck, Run would refuse to start:
		// TestMissingDeadLetterTopicFailsRunAtStart.)
		{name: "unknown topic", topic: "no-such-topic", opts: []kgo.Opt{kgo.UnknownTopicRetries(1)}, skipTopicCheck: true,
			want: "UNKNOWN_TOPIC_OR_PARTITION"},
		{name: "invalid record", topic: "dlq", want: "INVALID_RECORD",
			setup: func(_ *testing.T, b *kafkatest.Broker, _ *franz.Producer) {
				b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dlq", Err: kerr.InvalidRecord, Count: -1})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := kafkatest.NewKfake(t)
			b.CreateTopic(t, "in", 1)
			b.CreateTopic(t, "dlq", 1)
			recs := input(1, 0, n)
			recs[3].Value = make([]byte, max(tc.value, len(recs[3].Value)))
			b.Produce(t, "in", recs...)
			p := newProducerWith(t, franz.ProducerConfig{Brokers: b.Addrs(), Opts: tc.opts, SkipTopicCheck: tc.skipTopicCheck})
			if tc.setup != nil {
				tc.setup(t, b, p)
			}
			var obs retries
			r := testkit.Start(t, newSource(t, b, "g", "in"), dlqBuilder,
				pipeline.WithDeadLetter(p.DeadLetter(tc.topic)), pipeline.WithHooks(&obs))
			err := r.Wait(t)
			var se *pipeline.StageError
			if !errors.As(err, &se) {
				t.Fatalf("Run = %v, want a *pipeline.StageError", err)
			}
			if se.Stage != "decode" || se.Partition != 0 || se.Offset != 3 || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "dead-letter delivery failed") {
				t.Errorf("Run = %v, want stage decode failing at in/0@3 on the dead letter with %q", err, tc.want)
			}
			if got := obs.n.Load(); got != 0 {
				t.Errorf("the dead letter was retried %d times, want none", got)
			}
			if c := b.Committed(t, "g", "in"); c[0] != 3 || len(c) != 1 {
				t.Errorf("committed %v, want {0: 3}", c)
			}
			// Dead letters of later records may have been handed over
			// with it, and stored; its own is not.
			for part, offs := range deadLetterOffsets(t, b.ReadAll(t, "dlq")) {
				if part != 0 || slices.ContainsFunc(offs, func(o int64) bool { return o <= 3 }) {
					t.Errorf("dead letters of in/%d at %v stored, want none at or before offset 3", part, offs)
				}
			}
		})
	}
}
