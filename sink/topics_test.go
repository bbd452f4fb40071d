package sink_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A dead-letter topic that does not exist (a typo) makes Run return an
// error naming it and its role before the source starts: no record is
// consumed and nothing is committed, instead of a failure at the first
// invalid record.
func TestMissingDeadLetterTopicFailsRunAtStart(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "orders-dlq", 1)
	b.Produce(t, "in", input(1, 0, 10)...)
	p := newProducer(t, b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := pipeline.Run(ctx, newSource(t, b, "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("orders-dlg")))
	want := `sink: the dead-letter topic "orders-dlg" (Producer.DeadLetter) does not exist: create it, or set ProducerConfig.SkipTopicCheck to start without this check`
	if err == nil || err.Error() != want || !errors.Is(err, pipeline.ErrMissingTopic) {
		t.Fatalf("Run = %v, want %s (wrapping pipeline.ErrMissingTopic)", err, want)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v, want nothing: the source must not start", c)
	}
}

// An empty dead-letter topic fails Run at start too.
func TestEmptyDeadLetterTopicFailsRunAtStart(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	p := newProducer(t, b, nil)
	err := pipeline.Run(context.Background(), testkit.NewFake(), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("")))
	if err == nil || err.Error() != "sink: Producer.DeadLetter: the topic is empty" {
		t.Fatalf("Run = %v, want sink: Producer.DeadLetter: the topic is empty", err)
	}
}

// With ProducerConfig.SkipTopicCheck the destination is not checked: Run
// starts and consumes.
func TestSkipTopicCheckStartsWithAMissingDeadLetterTopic(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", input(1, 0, 3)...) // offsets 0-2: no invalid record
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: b.Addrs(), SkipTopicCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := start(t, newSource(t, b, "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("not-created-yet")))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: 3})
	stop(t, r)
}

// A Produce stage whose topic does not exist fails the first build with a
// *pipeline.BuildError naming the stage, the topic and its role.
func TestMissingOutputTopicFailsTheFirstBuild(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 2)
	p := newProducer(t, b, nil)
	r := start(t, newSource(t, b, "g", "in"), func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(in, p, "paymnets", func(r pipeline.Record) (sink.Message, error) { return sink.Message{Value: r.Value}, nil })
	})
	err := r.Wait(t)
	var be *pipeline.BuildError
	if !errors.As(err, &be) ||
		!strings.Contains(err.Error(), `stage "Produce#1": sink: the output topic "paymnets" (sink.Produce) does not exist: create it, or set ProducerConfig.SkipTopicCheck`) {
		t.Fatalf("Run = %v, want a BuildError naming Produce#1 and the missing output topic", err)
	}
}

// The source checks its input topics before it joins the group.
func TestMissingInputTopicFailsRunBeforeJoining(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	err := pipeline.Run(ctx, newSource(t, b, "g", "ordres"), dlqBuilder)
	if !errors.Is(err, pipeline.ErrMissingTopic) ||
		!strings.Contains(err.Error(), `source: the input topic "ordres" (Config.Topics) does not exist: create it, or set Config.SkipTopicCheck to start without this check`) {
		t.Fatalf("Run = %v, want an error naming the missing input topic", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v to fail", took)
	}
}
