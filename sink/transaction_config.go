package sink

import "time"

// DefaultTransactionTimeout is the TransactionConfig.TransactionTimeout
// the transactional producers use when it is zero: how long the broker
// keeps a crashed consumer's transaction open (delaying read_committed
// readers of its outputs) before it aborts it.
const DefaultTransactionTimeout = 10 * time.Second

// TransactionConfig is the half of a transactional producer's
// configuration that does not depend on the client: it means the same
// for package sink/confluent (librdkafka) and package franz (franz-go). A
// program builds it and embeds it in the client's TransactionalConfig
// (confluent.TransactionalConfig, franz.TransactionalConfig) next to that
// client's ProducerConfig, so changing client changes one literal:
//
//	t := sink.TransactionConfig{TransactionalID: "billing-" + podName}
//	prod, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: t})
//
// TransactionalID is required; the timeouts have defaults. The clients'
// NewTransactionalProducer validates it: an error names the offending
// field as TransactionalConfig.<Field> (TransactionalConfig.TransactionalID,
// ...).
type TransactionConfig struct {
	// TransactionalID identifies the producer to the transaction
	// coordinator (librdkafka's transactional.id, kgo.TransactionalID). It
	// must not be blank. It must be unique per consumer process (two live
	// producers with one id fence each other), and is best stable across
	// restarts of one instance (a prefix plus its pod name or client.id):
	// the restarted instance then aborts at once the transaction its
	// crashed predecessor left open, instead of the broker after
	// TransactionTimeout.
	TransactionalID string

	// TransactionTimeout is the producer's transaction timeout
	// (librdkafka's transaction.timeout.ms, kgo.TransactionTimeout): the
	// broker aborts a transaction open longer (its commit then fails and
	// its partitions rewind). Zero means DefaultTransactionTimeout; it must
	// not be negative, nor more than the brokers'
	// transaction.max.timeout.ms.
	TransactionTimeout time.Duration

	// CommitTimeout bounds initializing the producer's transactions when
	// the source's Run starts (librdkafka's InitTransactions, franz-go's
	// InitProducerID), and committing and aborting each transaction. Zero
	// means 10s; it must not be negative.
	CommitTimeout time.Duration
}
