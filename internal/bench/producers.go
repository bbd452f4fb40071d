package main

import (
	"context"
	"io"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
)

// producer is a backend's producer as the consume → produce and
// dead-letter cases use it.
type producer interface {
	io.Closer
	// produce is the backend's Produce stage of msgs to topic.
	produce(msgs pipeline.Stream[sluice.Message], topic string) pipeline.End
	// deadLetter is the backend's dead-letter destination on topic.
	deadLetter(topic string) func(context.Context, sluice.DeadLetter) error
}

// newProducer creates a backend's producer on the run's brokers.
type newProducer func(cfg runConfig) (producer, error)

func asIs(m sluice.Message) (sluice.Message, error) { return m, nil }

type sinkProducer struct{ *sink.Producer }

func (p sinkProducer) produce(msgs pipeline.Stream[sluice.Message], topic string) pipeline.End {
	return sink.Produce(msgs, p.Producer, topic, asIs)
}

func (p sinkProducer) deadLetter(topic string) func(context.Context, sluice.DeadLetter) error {
	return p.DeadLetter(topic)
}

type franzProducer struct{ *franz.Producer }

func (p franzProducer) produce(msgs pipeline.Stream[sluice.Message], topic string) pipeline.End {
	return franz.Produce(msgs, p.Producer, topic, asIs)
}

func (p franzProducer) deadLetter(topic string) func(context.Context, sluice.DeadLetter) error {
	return p.DeadLetter(topic)
}

func newSinkProducer(cfg runConfig) (producer, error) {
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: cfg.brokers})
	if err != nil {
		return nil, err
	}
	return sinkProducer{p}, nil
}

func newFranzProducer(cfg runConfig) (producer, error) {
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: cfg.brokers})
	if err != nil {
		return nil, err
	}
	return franzProducer{p}, nil
}
