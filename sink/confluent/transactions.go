package confluent

import (
	"errors"
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/source"
)

// DefaultTransactionTimeout is the transaction.timeout.ms of a
// transactional producer unless its TransactionTimeout says otherwise; it
// equals sink.DefaultTransactionTimeout (and franz.DefaultTransactionTimeout).
const DefaultTransactionTimeout = sink.DefaultTransactionTimeout

// TransactionalConfig configures [NewTransactionalProducer]: librdkafka's
// [ProducerConfig] and the client-independent [sink.TransactionConfig]
// (see its fields' contracts), whose fields it promotes; errors name them
// as TransactionalConfig.<Field>.
//
// With librdkafka, TransactionalID and TransactionTimeout are the
// producer's transactional.id and transaction.timeout.ms, which
// Overrides may not set. Unless Overrides sets message.timeout.ms, its
// default (30s) is lowered to TransactionTimeout when that is shorter:
// librdkafka requires message.timeout.ms <= transaction.timeout.ms.
// CommitTimeout bounds librdkafka's InitTransactions, which the source's
// Run calls before it creates its consumer.
type TransactionalConfig struct {
	// ProducerConfig is validated as for [NewProducer]. Its Overrides may
	// not set transactional.id nor transaction.timeout.ms (use
	// TransactionConfig).
	ProducerConfig

	// TransactionConfig is the client-independent half: TransactionalID,
	// TransactionTimeout and CommitTimeout, promoted
	// (cfg.TransactionalID).
	sink.TransactionConfig
}

// NewTransactionalProducer returns a transactional producer bound to src
// for exactly-once consume-transform-produce: while src runs, everything
// produced through it (sink.Produce stages and DeadLetter, which work
// with it unchanged) and the offsets of the records behind it commit in
// one Kafka transaction per commit interval (Config.CommitInterval of
// src), and src commits no offsets itself. Readers of the outputs with
// isolation.level=read_committed see every input's outputs exactly once;
// see docs/exactly-once.md for what it guarantees and costs.
//
// Call it before src's Run, once per source, and use the producer for
// that Run only; Close it after pipeline.Run returned. Errors name the
// offending field; binding a second producer to src, or binding once its
// Run started (or returned), is an error saying so.
func NewTransactionalProducer(src *source.Source, cfg TransactionalConfig) (*Producer, error) {
	if src == nil {
		return nil, errors.New("confluent: NewTransactionalProducer: the source is nil")
	}
	if err := exactlyonce.CheckConfig("confluent", cfg.TransactionConfig); err != nil {
		return nil, err
	}
	for _, k := range []string{"transactional.id", "transaction.timeout.ms"} {
		if _, ok := cfg.Overrides[k]; ok {
			return nil, fmt.Errorf("confluent: ProducerConfig.Overrides[%q] cannot be set for a transactional producer: use TransactionalConfig", k)
		}
	}
	m, err := producerProperties(cfg.ProducerConfig)
	if err != nil {
		return nil, err
	}
	timeout := exactlyonce.TransactionTimeoutOrDefault(cfg.TransactionTimeout)
	m["transactional.id"] = cfg.TransactionalID
	m["transaction.timeout.ms"] = int(timeout.Milliseconds())
	if _, ok := cfg.Overrides["message.timeout.ms"]; !ok {
		// librdkafka requires message.timeout.ms <= transaction.timeout.ms.
		m["message.timeout.ms"] = min(int(timeout.Milliseconds()), 30000)
	}
	p, err := newProducer(cfg.ProducerConfig, m)
	if err != nil {
		return nil, err
	}
	b := exactlyonce.Binding[*kafka.Producer]{Producer: p.p, TransactionalID: cfg.TransactionalID, Config: exactlyonce.Config{
		Logger: cfg.Logger, CommitTimeout: cfg.CommitTimeout}}
	if err := librdkafka.SourceSlot(src).Bind(b); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("confluent: NewTransactionalProducer: %w", err)
	}
	return p, nil
}
