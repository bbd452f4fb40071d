package sink_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// toMsg maps an input record to the output message: same key, value
// prefixed, the input's headers plus one naming its origin.
func toMsg(r pipeline.Record) (sink.Message, error) {
	hs := make([]pipeline.Header, 0, len(r.Headers)+1)
	hs = append(hs, r.Headers...)
	hs = append(hs, pipeline.Header{Key: "from", Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)})
	return sink.Message{Key: r.Key, Value: append([]byte("out:"), r.Value...), Headers: hs}, nil
}

// Every input record is produced exactly once, with the key, value and
// headers toMsg made; the input commits to its end.
func TestProduceWritesExactly(t *testing.T) {
	t.Parallel()
	const parts, n = 3, 200
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", parts)
	b.CreateTopic(t, "out", 2)
	b.Produce(t, "in", input(parts, 0, n)...)
	in := b.ReadAll(t, "in")
	p := newProducer(t, b, nil)

	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsg)
	}
	r := start(t, newSource(t, b, "g", "in"), build)
	waitCommitted(t, b, r, "g", "in", b.HighWatermarks(t, "in"))
	stop(t, r)

	out := b.ReadAll(t, "out")
	if len(out) != len(in) {
		t.Errorf("produced %d records, want %d", len(out), len(in))
	}
	byKey := map[string]pipeline.Record{}
	for _, o := range out {
		if _, dup := byKey[string(o.Key)]; dup {
			t.Errorf("key %s produced twice", o.Key)
		}
		byKey[string(o.Key)] = o
	}
	for _, i := range in {
		o, ok := byKey[string(i.Key)]
		want, _ := toMsg(i)
		switch {
		case !ok:
			t.Errorf("input %d@%d (key %s) not produced", i.Partition, i.Offset, i.Key)
		case string(o.Value) != string(want.Value) || headersString(o.Headers) != headersString(want.Headers):
			t.Errorf("output for key %s = value %q headers %s, want %q %s",
				i.Key, o.Value, headersString(o.Headers), want.Value, headersString(want.Headers))
		}
	}
}

// While the broker refuses the output topic's produce requests with a
// retriable error, librdkafka retries and no input offset is committed;
// once it accepts them, everything is delivered once (the producer is
// idempotent) and the input commits to its end.
func TestProduceCommitsOnlyAfterDelivery(t *testing.T) {
	t.Parallel()
	const n = 50
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(2, 0, n)...)
	p := newProducer(t, b, map[string]any{"retry.backoff.ms": 20, "retry.backoff.max.ms": 50})
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})

	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsg)
	}
	r := start(t, newSource(t, b, "g", "in"), build)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// Twenty refused produce requests: the records were consumed and
	// produced, and the commit interval (50ms) passed many times.
	if err := refused.Wait(ctx, 20); err != nil {
		t.Fatalf("waiting for refused produce requests: %v", err)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v while no delivery had succeeded, want nothing", c)
	}
	refused.Remove()
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
	stop(t, r)
	if out := b.ReadAll(t, "out"); len(out) != 2*n {
		t.Errorf("produced %d records, want %d", len(out), 2*n)
	}
}

// A delivery that fails for good (a non-retriable produce error) stops Run
// with a StageError at the first record whose delivery failed; nothing
// from it on is committed.
func TestProduceDeliveryFailureStopsRun(t *testing.T) {
	t.Parallel()
	const k = 10
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(1, 0, k)...)
	p := newProducer(t, b, nil)

	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsg, stages.Name("to-out"))
	}
	r := start(t, newSource(t, b, "g", "in"), build)
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: k})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.InvalidRecord, Count: -1})
	b.Produce(t, "in", input(1, k, 5)...)

	err := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *pipeline.StageError", err)
	}
	if se.Stage != "to-out" || se.Topic != "in" || se.Partition != 0 || se.Offset != k ||
		!strings.Contains(err.Error(), "delivery to out failed") {
		t.Errorf("Run = %v (%+v), want stage to-out failing at in/0@%d on the delivery", err, *se, k)
	}
	if c := b.Committed(t, "g", "in"); c[0] != k || len(c) != 1 {
		t.Errorf("committed %v, want {0: %d}", c, k)
	}
	if out := b.ReadAll(t, "out"); len(out) != k {
		t.Errorf("produced %d records, want the %d delivered before the failure", len(out), k)
	}
}

// librdkafka hands every delivery report to one goroutine per producer,
// which blocks while the report's channel is full. A Produce stage must
// therefore never have more reports outstanding than its channel holds:
// here 2000 reports arrive at once (the broker refused the output topic
// until then) while the stage waits for room in the dead-letter queue,
// whose deliveries need that same goroutine. The stage, the dead letters
// and every other user of the producer would wait on each other for good.
func TestProduceReportsNeverBlockTheProducer(t *testing.T) {
	t.Parallel()
	const valid, invalid = 2000, 4000
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
	toMsgOrInvalid := func(r pipeline.Record) (sink.Message, error) {
		if r.Offset >= valid {
			once.Do(func() { close(sawInvalid) })
			return sink.Message{}, pipeline.Invalid(fmt.Errorf("offset %d", r.Offset))
		}
		return toMsg(r)
	}
	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsgOrInvalid)
	}
	r := start(t, newSource(t, b, "g", "in"), build, pipeline.WithDeadLetter(p.DeadLetter("dlq")))
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
