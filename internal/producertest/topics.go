package producertest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// missingDeadLetterTopic: a dead-letter topic that does not exist (a
// typo) makes Run return an error naming it and its role before the
// source starts: no record is consumed and nothing is committed, instead
// of a failure at the first invalid record.
func (s *suite[P]) missingDeadLetterTopic(t *T) {
	b := kafkatest.NewBroker(t)
	p := s.setUp(t, b, 1, 10, "orders-dlq", 1)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := pipeline.Run(ctx, s.h.NewSource(t, b.Addrs(), "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("orders-dlg")))
	want := s.h.Name + `: the dead-letter topic "orders-dlg" (Producer.DeadLetter) does not exist: create it, or set ProducerConfig.SkipTopicCheck to start without this check`
	if err == nil || err.Error() != want || !errors.Is(err, sluice.ErrMissingTopic) {
		t.Fatalf("Run = %v, want %s (wrapping sluice.ErrMissingTopic)", err, want)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v, want nothing: the source must not start", c)
	}
}

// emptyDeadLetterTopic: an empty dead-letter topic fails Run at start too.
func (s *suite[P]) emptyDeadLetterTopic(t *T) {
	b := kafkatest.NewBroker(t)
	p := s.newProducer(t, Config{Brokers: b.Addrs(), FastRetries: true})
	err := pipeline.Run(context.Background(), testkit.NewFake(), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("")))
	if want := s.h.Name + ": Producer.DeadLetter: the topic is empty"; err == nil || err.Error() != want {
		t.Fatalf("Run = %v, want %s", err, want)
	}
}

// skipTopicCheck: with ProducerConfig.SkipTopicCheck the destination is
// not checked: Run starts and consumes.
func (s *suite[P]) skipTopicCheck(t *T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", Input(1, 0, 3)...) // offsets 0-2: no invalid record
	p := s.newProducer(t, Config{Brokers: b.Addrs(), SkipTopicCheck: true})
	s.drain(t, b, 1, 3, dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("not-created-yet")))
}

// missingOutputTopic: a Produce stage whose topic does not exist fails
// the first build with a *sluice.BuildError naming the stage, the topic
// and its role.
func (s *suite[P]) missingOutputTopic(t *T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 2)
	p := s.newProducer(t, Config{Brokers: b.Addrs(), FastRetries: true})
	r := s.start(t, b, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, "paymnets", func(r sluice.Record) (sluice.Message, error) { return sluice.Message{Value: r.Value}, nil })
	})
	err := r.Wait(t)
	want := `stage "Produce#1": ` + s.h.Name + `: the output topic "paymnets" (sink.Produce) does not exist: create it, or set ProducerConfig.SkipTopicCheck`
	var be *sluice.BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want a BuildError naming Produce#1 and the missing output topic (%s)", err, want)
	}
}

// missingInputTopic: the source checks its input topics before it joins
// the group.
func (s *suite[P]) missingInputTopic(t *T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	err := pipeline.Run(ctx, s.h.NewSource(t, b.Addrs(), "g", "ordres"), dlqBuilder)
	want := s.h.SourceName + `: the input topic "ordres" (Config.Topics) does not exist: create it, or set Config.SkipTopicCheck to start without this check`
	if !errors.Is(err, sluice.ErrMissingTopic) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want an error naming the missing input topic (%s)", err, want)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v to fail", took)
	}
}
