package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
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
	p := newProducer(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := pipeline.Run(ctx, newSource(t, b, "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("orders-dlg")))
	want := `franz: the dead-letter topic "orders-dlg" (Producer.DeadLetter) does not exist: create it, or set ProducerConfig.SkipTopicCheck to start without this check`
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
	p := newProducer(t, b)
	err := pipeline.Run(context.Background(), testkit.NewFake(), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("")))
	if err == nil || err.Error() != "franz: Producer.DeadLetter: the topic is empty" {
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
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs(), SkipTopicCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := testkit.Start(t, newSource(t, b, "g", "in"), dlqBuilder, pipeline.WithDeadLetter(p.DeadLetter("not-created-yet")))
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: 3})
	stop(t, r)
}

// A Produce stage whose topic does not exist fails the first build with a
// *pipeline.BuildError naming the stage, the topic and its role.
func TestMissingOutputTopicFailsTheFirstBuild(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 2)
	p := newProducer(t, b)
	r := testkit.Start(t, newSource(t, b, "g", "in"), func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
		return franz.Produce(in, p, "paymnets", func(r pipeline.Record) (pipeline.Message, error) { return pipeline.Message{Value: r.Value}, nil })
	})
	err := r.Wait(t)
	var be *pipeline.BuildError
	if !errors.As(err, &be) ||
		!strings.Contains(err.Error(), `stage "Produce#1": franz: the output topic "paymnets" (franz.Produce) does not exist: create it, or set ProducerConfig.SkipTopicCheck`) {
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
		!strings.Contains(err.Error(), `franz: the input topic "ordres" (Config.Topics) does not exist: create it, or set Config.SkipTopicCheck to start without this check`) {
		t.Fatalf("Run = %v, want an error naming the missing input topic", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v to fail", took)
	}
}

// The share source checks its input topics before it joins the share
// group.
func TestShareSourceMissingInputTopicFailsRunBeforeJoining(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	src, err := franz.NewShareSource(franz.ShareConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "ordres"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = pipeline.Run(ctx, src, dlqBuilder)
	if !errors.Is(err, pipeline.ErrMissingTopic) ||
		!strings.Contains(err.Error(), `franz: the input topic "ordres" (ShareConfig.Topics) does not exist: create it, or set ShareConfig.SkipTopicCheck to start without this check`) {
		t.Fatalf("Run = %v, want an error naming the missing input topic", err)
	}
}

// A transactional producer has no client of its own before its source's
// Run: its dead-letter destination's start check looks the topic up with
// a client made for it.
func TestTransactionalDeadLetterTopicCheckedBeforeRun(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "dlq", 1)
	src, err := franz.NewSource(franz.Config{Brokers: b.Addrs(), Group: "g", Topics: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
		ProducerConfig: franz.ProducerConfig{Brokers: b.Addrs()}, TransactionalID: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.DeadLetter("dlq").CheckStart(ctx); err != nil {
		t.Errorf("CheckStart of an existing topic = %v, want nil", err)
	}
	if err := p.DeadLetter("dlg").CheckStart(ctx); !errors.Is(err, pipeline.ErrMissingTopic) ||
		!strings.Contains(err.Error(), `the dead-letter topic "dlg" (Producer.DeadLetter) does not exist`) {
		t.Errorf("CheckStart of a missing topic = %v, want an error naming it", err)
	}
}
