package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
)

// errExactlyOnceFranz refuses --exactly-once with --client franz: the
// franz backend has no transactional producer yet (docs/exactly-once.md
// says why).
var errExactlyOnceFranz = errors.New("--exactly-once: not available with --client=franz yet (see docs/exactly-once.md); use --client=librdkafka")

// newLibrdkafkaProducer returns the librdkafka backend's producer: with
// --exactly-once a transactional one bound to src (outputs and input
// offsets commit in one transaction per commit interval), else a plain
// one.
func newLibrdkafkaProducer(o options, src *source.Kafka, cfg sink.ProducerConfig) (*sink.Producer, error) {
	if !o.exactlyOnce {
		return sink.NewProducer(cfg)
	}
	return sink.NewTransactionalProducer(src, sink.TransactionalConfig{ProducerConfig: cfg, TransactionalID: transactionalID(o)})
}

// transactionalID is the demo's transactional.id: unique per process and,
// with --client-id, stable across its restarts (a restarted process then
// aborts at once what its crashed predecessor left open).
func transactionalID(o options) string {
	if o.clientID != "" {
		return "sluice-example-" + o.clientID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("sluice-example-%s-%d", host, os.Getpid())
}
