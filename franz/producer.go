package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// ErrClosed is wrapped by the errors of produce calls made after (or
// outstanding when) [Producer.Close] closed the producer.
var ErrClosed = errors.New("franz: the producer is closed")

// Producer is a kgo producer shared by the [Produce] stages of every
// partition and by the dead-letter destination ([Producer.DeadLetter]).
// It is safe for concurrent use. Create it before pipeline.Run and close
// it after Run returned.
type Producer struct {
	cl           *kgo.Client
	logger       *slog.Logger
	closeTimeout time.Duration
	// tr is what the receivers (Produce stages, dead letters) and Close
	// share: pending reports, the messages given up on; its Gone is
	// closed once kgo's Close returned (no promise runs after).
	tr *produce.Tracker
}

// NewProducer validates cfg, refuses the kgo options the producer relies
// on (an error naming the option and why), and creates the client; kgo
// connects on the first produce.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts, err := producerOpts(cfg, logger)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("franz: creating the producer: %w", err)
	}
	p := &Producer{
		cl:           cl,
		logger:       logger,
		closeTimeout: cfg.CloseTimeout,
		tr:           produce.NewTracker(produce.Names{Package: "franz", ErrClosed: ErrClosed}),
	}
	if p.closeTimeout == 0 {
		p.closeTimeout = DefaultProducerCloseTimeout
	}
	return p, nil
}

// report is one delivery report: kgo's promise sends it to the receiver's
// channel.
type report struct {
	t   stagekit.Ticket
	err error
}

// client is the kgo side of the produce core.
type client struct{ p *Producer }

// Send hands o to kgo. kgo's Produce blocks while the client buffers
// kgo.MaxBufferedRecords (or bytes) records, until ctx ends: then the
// promise reports ctx's error. The record's own context is Background:
// a record once buffered is delivered or fails on kgo's terms
// (kgo.RecordDeliveryTimeout), never cancelled by the partition's end, so
// its report always comes. kgo calls promises one at a time from one
// goroutine: the receiver keeps room for the report (the core's
// outstanding bound), so a promise never blocks.
func (c client) Send(ctx context.Context, o *produce.Outgoing, reports chan report) error {
	r := &kgo.Record{
		Topic:     o.Topic,
		Key:       o.Message.Key,
		Value:     o.Message.Value,
		Timestamp: o.Timestamp,
		Context:   context.Background(),
	}
	if len(o.Message.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(o.Message.Headers))
		for i, h := range o.Message.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	t := o.Ticket
	return c.p.tr.Send(func() error {
		c.p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) { reports <- report{t, err} })
		return nil
	})
}

// QueueFull is never true: kgo's Produce waits for room itself.
func (client) QueueFull(error) bool { return false }

func (client) Report(ev report) (stagekit.Ticket, error, bool) { return ev.t, ev.err, true }

// GaveUp: Close aborts what is left (kgo.ErrAborting); what kgo's own
// close fails (kgo.ErrClientClosed), and a produce that waited for room
// until Close started (context.Canceled), are given up on too.
func (c client) GaveUp(err error) bool {
	if errors.Is(err, kgo.ErrAborting) {
		return true
	}
	return c.p.tr.Closing() && (errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled))
}

func (client) Classify(err error) error { return classify(err) }
