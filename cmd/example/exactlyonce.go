package main

import (
	"fmt"
	"os"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
)

// newLibrdkafkaProducer returns the librdkafka backend's producer: with
// --exactly-once a transactional one bound to src (outputs and input
// offsets commit in one transaction per commit interval), else a plain
// one.
func newLibrdkafkaProducer(o options, src *source.Source, cfg confluent.ProducerConfig) (*confluent.Producer, error) {
	if !o.exactlyOnce {
		return confluent.NewProducer(cfg)
	}
	return confluent.NewTransactionalProducer(src, confluent.TransactionalConfig{ProducerConfig: cfg, TransactionConfig: transactionConfig(o)})
}

// newFranzProducer returns the franz backend's producer: with
// --exactly-once a transactional one bound to src (it shares src's kgo
// client, which already has --client-id), else a plain one.
func newFranzProducer(o options, src *franz.Source, cfg franz.ProducerConfig) (*franz.Producer, error) {
	if !o.exactlyOnce {
		return franz.NewProducer(cfg)
	}
	return franz.NewTransactionalProducer(src, franz.TransactionalConfig{
		ProducerConfig:    franz.ProducerConfig{Logger: cfg.Logger},
		TransactionConfig: transactionConfig(o),
	})
}

// transactionConfig is the demo's client-independent half of either
// client's TransactionalConfig: a TransactionalID unique per process and,
// with --client-id, stable across its restarts (a restarted process then
// aborts at once what its crashed predecessor left open); the timeouts'
// defaults.
func transactionConfig(o options) sink.TransactionConfig {
	id := "sluice-example-" + o.clientID
	if o.clientID == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("sluice-example-%s-%d", host, os.Getpid())
	}
	return sink.TransactionConfig{TransactionalID: id}
}
