package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Every input record is produced exactly once, with the key, value and
// headers toMsg made; the input commits exactly to its high watermarks.
func TestProduceWritesExactly(t *testing.T) {
	t.Parallel()
	const parts, n = 3, 200
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", parts)
	b.CreateTopic(t, "out", 2)
	b.Produce(t, "in", input(parts, 0, n)...)
	in := b.ReadAll(t, "in")
	p := newProducer(t, b)

	r := testkit.Start(t, newSource(t, b, "g", "in"), produceTo(p, "out"))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n, 2: n})
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
// retriable error, kgo retries and no input offset is committed; once it
// accepts them, everything is delivered once (the producer is idempotent)
// and the input commits exactly to its end.
func TestProduceCommitsOnlyAfterDelivery(t *testing.T) {
	t.Parallel()
	const n = 50
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(2, 0, n)...)
	p := newProducer(t, b)
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})

	r := testkit.Start(t, newSource(t, b, "g", "in"), produceTo(p, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// Ten refused produce requests: the records were consumed and
	// produced, and the commit interval (50ms) passed many times (kgo
	// backs off up to 1s between retries).
	if err := refused.Wait(ctx, 10); err != nil {
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
// with a StageError at the first record whose delivery failed, naming the
// topic; the partition commits exactly up to it.
func TestProduceDeliveryFailureStopsRun(t *testing.T) {
	t.Parallel()
	const k = 10
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(1, 0, k)...)
	p := newProducer(t, b)

	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return franz.Produce(s, p, "out", toMsg, stages.Name("to-out"))
	}
	r := testkit.Start(t, newSource(t, b, "g", "in"), build)
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: k})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.InvalidRecord, Count: -1})
	b.Produce(t, "in", input(1, k, 5)...)

	err := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *pipeline.StageError", err)
	}
	if se.Stage != "to-out" || se.Topic != "in" || se.Partition != 0 || se.Offset != k ||
		!strings.Contains(err.Error(), "delivery to out failed") || !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("Run = %v (%+v), want stage to-out failing at in/0@%d on the delivery to out with INVALID_RECORD", err, *se, k)
	}
	if c := b.Committed(t, "g", "in"); c[0] != k || len(c) != 1 {
		t.Errorf("committed %v, want {0: %d}", c, k)
	}
	if out := b.ReadAll(t, "out"); len(out) != k {
		t.Errorf("produced %d records, want the %d delivered before the failure", len(out), k)
	}
}

// A nil producer, an empty topic or a nil toMsg fails the build with a
// *pipeline.BuildError naming the stage.
func TestProduceWithBadArgumentsFailsTheBuild(t *testing.T) {
	t.Parallel()
	p := &franz.Producer{} // never used: the build fails before the stage runs
	for name, tc := range map[string]struct {
		build pipeline.Builder
		want  string
	}{
		"nil producer": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return franz.Produce(in, nil, "out", toMsg)
		}, "franz.Produce: the producer is nil"},
		"empty topic": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return franz.Produce(in, p, "", toMsg)
		}, "franz.Produce: the topic is empty"},
		"nil toMsg": {func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return franz.Produce[pipeline.Record](in, p, "out", nil)
		}, "franz.Produce: toMsg is nil"},
	} {
		t.Run(name, func(t *testing.T) {
			h := testkit.New(t, tc.build)
			if err := h.Fake().Assign("t", 0); err == nil {
				t.Fatal("Assign succeeded; want the build to fail")
			}
			err := h.Wait()
			var be *pipeline.BuildError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), `"Produce#1"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want a BuildError naming Produce#1 and %q", err, tc.want)
			}
		})
	}
}
