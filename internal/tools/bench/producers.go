package main

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
)

// newProducer creates a backend's producer on the run's brokers: the
// consume → produce and dead-letter cases use it through sink.Produce and
// its DeadLetter, whichever the client.
type newProducer func(cfg runConfig) (sink.Producer, error)

func asIs(m sluice.Message) (sluice.Message, error) { return m, nil }

func newSinkProducer(cfg runConfig) (sink.Producer, error) {
	p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: cfg.brokers})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func newFranzProducer(cfg runConfig) (sink.Producer, error) {
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: cfg.brokers})
	if err != nil {
		return nil, err
	}
	return p, nil
}
