package producertest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// producerInBuilder: a producer created inside the builder (one Kafka
// client per partition and per reassignment, never closed) fails the
// first build with a *sluice.BuildError naming the mistake, before any
// client leaks into a running graph.
func (s *suite[P]) producerInBuilder(t *T) {
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "out", 1)
	var mu sync.Mutex
	var made []P
	t.Cleanup(func() {
		for _, p := range made {
			_ = p.Close()
		}
	})
	fake := testkit.NewFake()
	r := testkit.Start(t, fake, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		p, err := s.h.NewProducer(Config{Brokers: b.Addrs()}) // wrong: one per partition
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		made = append(made, p)
		mu.Unlock()
		return sink.Produce(in, p, "out", func(r sluice.Record) (sluice.Message, error) { return sluice.Message{Value: r.Value}, nil })
	})
	if err := fake.Assign("in", 0); err == nil {
		t.Fatal("Assign succeeded; want the build to fail")
	}
	err := r.Wait(t)
	var be *sluice.BuildError
	if !errors.As(err, &be) || be.Partition != 0 || !strings.Contains(err.Error(), `"Produce#1"`) ||
		!strings.Contains(err.Error(), "created inside the builder") || !strings.Contains(err.Error(), "before pipeline.Run") {
		t.Fatalf("Run = %v, want a BuildError for in/0 naming Produce#1, the producer created inside the builder and the fix", err)
	}
}

// badArguments: a nil producer, an empty topic, a nil toMsg or a zero
// producer value (not made by its constructor) fails the
// build with a *sluice.BuildError naming the stage, instead of a panic
// in the builder.
func (s *suite[P]) badArguments(t *T) {
	var nilP P
	p := s.h.Unstarted() // never used: the build fails before the stage runs
	for _, tc := range []struct {
		name  string
		build pipeline.Builder
		want  string
	}{
		{"nil producer", func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, nilP, "out", ToMessage)
		}, "sink.Produce: the producer is nil"},
		{"empty topic", func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, p, "", ToMessage)
		}, "sink.Produce: the topic is empty"},
		{"nil toMsg", func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, p, "out", nil)
		}, "sink.Produce: toMsg is nil"},
		{"zero producer", func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, p, "out", ToMessage)
		}, "was not made by its constructor"},
	} {
		t.Run(tc.name, func(t *T) {
			synctest.Test(t.T, func(st *testing.T) {
				t := &T{T: st, clause: t.clause}
				h := testkit.New(t, tc.build)
				if err := h.Fake().Assign("t", 0); err == nil {
					t.Fatal("Assign succeeded; want the build to fail")
				}
				err := h.Wait()
				var be *sluice.BuildError
				if !errors.As(err, &be) || !strings.Contains(err.Error(), `"Produce#1"`) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run = %v, want a BuildError naming Produce#1 and %q", err, tc.want)
				}
			})
		})
	}
}
