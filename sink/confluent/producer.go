package confluent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// ErrClosed is wrapped by the errors of produce calls made after (or
// outstanding when) [Producer.Close] closed the producer. errors.Is finds
// sink.ErrClosed in it too, as in every backend's.
var ErrClosed = produce.NewErrClosed("confluent")

// Producer is a confluent-kafka-go (librdkafka) producer, a
// sink.Producer: pass it to sink.Produce, and its DeadLetter to
// pipeline.WithDeadLetter. One Producer is shared by the Produce stages
// of every partition and by the dead-letter destination. It is safe for
// concurrent use. Create it before pipeline.Run and Close it after Run
// returned.
type Producer struct {
	// core makes Producer a sink.Producer: sink.Produce and DeadLetter
	// send through it (client below).
	*core

	p            *kafka.Producer
	logger       *slog.Logger
	closeTimeout time.Duration
	// maxBuffered is librdkafka's queue.buffering.max.messages.
	maxBuffered int
	// tr is what the receivers (Produce stages, dead letters) and Close
	// share: pending reports, the messages given up on; its Gone is
	// closed once the client delivers no more reports (its poller
	// stopped).
	tr *produce.Tracker
	// topics checks the topics written to (the dead-letter topic at Run's
	// start, a Produce stage's at its first build).
	topics *produce.Topics

	wg sync.WaitGroup // events and logs goroutines
}

// NewProducer validates cfg (an error names the offending field or
// override) and creates a librdkafka producer, which connects in the
// background. Call it once, before pipeline.Run (one created inside a
// builder fails the build), share the result between every graph and the
// dead-letter destination, and Close it after Run returned: until then it
// runs two goroutines (events and logs) and librdkafka's threads.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	m, err := producerProperties(cfg)
	if err != nil {
		return nil, err
	}
	return newProducer(cfg, m)
}

// newProducer connects a producer with the librdkafka configuration m.
func newProducer(cfg ProducerConfig, m kafka.ConfigMap) (*Producer, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger.Debug("confluent: creating producer", librdkafka.Redacted(m)...)
	kp, err := kafka.NewProducer(&m)
	if err != nil {
		return nil, fmt.Errorf("confluent: creating the producer: %w", err)
	}
	p := &Producer{
		p:            kp,
		logger:       logger,
		closeTimeout: cfg.CloseTimeout,
		maxBuffered:  maxBufferedMessages(m),
		tr:           produce.NewTracker(produce.Names{Package: "confluent", ErrClosed: ErrClosed}),
	}
	p.core = produce.NewCore(client{p}, p.tr)
	if p.closeTimeout == 0 {
		p.closeTimeout = DefaultProducerCloseTimeout
	}
	p.topics = produce.NewTopics(p.tr.Names(), cfg.SkipTopicCheck, "ProducerConfig.SkipTopicCheck", p.describeTopics, logger)
	p.wg.Go(p.events)
	p.wg.Go(p.logs)
	return p, nil
}

// core is the embedded produce core, under a name that keeps it out of
// Producer's exported API.
type core = produce.Core

// client is the librdkafka side of the produce core: delivery reports
// are kafka.Events on the receiver's channel, a message's Opaque holds its
// ticket.
type client struct{ p *Producer }

// Send hands o to librdkafka; a full queue is an ErrQueueFull error
// (librdkafka never blocks Produce), so ctx is not needed.
func (c client) Send(_ context.Context, o *produce.Outgoing, reports chan produce.Event) error {
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &o.Topic, Partition: kafka.PartitionAny},
		Key:            o.Message.Key,
		Value:          o.Message.Value,
		Timestamp:      o.Timestamp,
		Opaque:         o.Ticket,
	}
	if len(o.Message.Headers) > 0 {
		msg.Headers = make([]kafka.Header, len(o.Message.Headers))
		for i, h := range o.Message.Headers {
			msg.Headers[i] = kafka.Header{Key: h.Key, Value: h.Value}
		}
	}
	return c.p.tr.Send(func() error { return c.p.p.Produce(msg, deliveryChan(reports)) })
}

func (client) QueueFull(err error) bool { return codeOf(err) == kafka.ErrQueueFull }

// Report reads a receiver's event, which librdkafka wrote as a
// kafka.Event (see deliveryChan): it is converted back to one before its
// type is asked.
func (client) Report(ev produce.Event) (stagekit.Ticket, error, bool) {
	m, ok := kafka.Event(ev).(*kafka.Message)
	if !ok {
		return stagekit.Ticket{}, nil, false
	}
	t, _ := m.Opaque.(stagekit.Ticket)
	return t, m.TopicPartition.Error, true
}

// GaveUp: Close purges what is left (librdkafka's purge codes).
func (client) GaveUp(err error) bool {
	c := codeOf(err)
	return c == kafka.ErrPurgeQueue || c == kafka.ErrPurgeInflight
}

func (c client) Classify(err error) error { return c.p.classify(err) }

// MaxBuffered is librdkafka's queue.buffering.max.messages.
func (c client) MaxBuffered() int { return c.p.maxBuffered }

// Topics returns the producer's topic checks (produce.TopicChecker).
func (c client) Topics() *produce.Topics { return c.p.topics }

// describeTopics looks names up for the topic checks on the producer's
// handle, unless Close started: librdkafka's handle is freed by Close,
// which waits for the lookup (at most topiccheck.Timeout).
func (p *Producer) describeTopics(ctx context.Context, names []string) (out map[string]error, err error) {
	describe := librdkafka.Describe(func() (*kafka.AdminClient, error) { return kafka.NewAdminClientFromProducer(p.p) })
	if !p.tr.WhileOpen(func() { out, err = describe(ctx, names) }) {
		return nil, ErrClosed
	}
	return out, err
}

// codeOf returns the librdkafka error code of err, ErrNoError if it has
// none.
func codeOf(err error) kafka.ErrorCode {
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return kerr.Code()
	}
	return kafka.ErrNoError
}

// events logs what librdkafka reports outside delivery reports (which go
// to the receivers' own channels). It returns when the client closed its
// event channel, after its poller stopped: no report is delivered after.
func (p *Producer) events() {
	defer p.tr.MarkGone()
	for ev := range p.p.Events() {
		switch e := ev.(type) {
		case kafka.Error:
			if e.IsFatal() {
				p.logger.Error("confluent: fatal producer error", "err", e)
			} else {
				p.logger.Warn("confluent: producer error", "err", e)
			}
		case *kafka.Message:
			// A delivery report without its own channel: not ours.
		}
	}
}

func (p *Producer) logs() {
	for l := range p.p.Logs() {
		p.logger.Debug("librdkafka", "name", l.Name, "tag", l.Tag, "level", l.Level, "message", l.Message)
	}
}
