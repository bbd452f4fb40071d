package confluent

import (
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/source"
)

// DefaultTransactionTimeout is the transaction.timeout.ms of a
// transactional producer unless [TransactionalConfig.TransactionTimeout]
// says otherwise: how long the broker keeps a crashed consumer's
// transaction open (delaying read_committed readers of its outputs)
// before it aborts it. franz.DefaultTransactionTimeout is the same.
const DefaultTransactionTimeout = exactlyonce.DefaultTransactionTimeout

// TransactionalConfig configures [NewTransactionalProducer].
type TransactionalConfig struct {
	// ProducerConfig is validated as for [NewProducer]. Its Overrides may
	// not set transactional.id nor transaction.timeout.ms (use the fields
	// below).
	ProducerConfig
	// TransactionalID identifies the producer to the transaction
	// coordinator. Required. It must be unique per consumer process (two
	// live producers with one id fence each other), and is best stable
	// across restarts of one instance (a prefix plus its client.id or pod
	// name): the restarted instance then aborts at once the transaction its
	// crashed predecessor left open, instead of the broker after
	// TransactionTimeout.
	TransactionalID string
	// TransactionTimeout is the producer's transaction.timeout.ms (0:
	// DefaultTransactionTimeout; at most the brokers'
	// transaction.max.timeout.ms). A transaction open longer is aborted by
	// the broker, which stops Run at the next commit. message.timeout.ms
	// is lowered to it unless Overrides sets it.
	TransactionTimeout time.Duration
	// CommitTimeout bounds initializing, committing and aborting each
	// transaction (0: 10s).
	CommitTimeout time.Duration
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
	if err := exactlyonce.CheckConfig("confluent", cfg.TransactionalID, cfg.TransactionTimeout, cfg.CommitTimeout); err != nil {
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
