package franz

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/rebalance"
)

const (
	// DefaultProducerCloseTimeout is how long [Producer.Close] waits for
	// outstanding deliveries unless [ProducerConfig.CloseTimeout] says
	// otherwise (as confluent.DefaultProducerCloseTimeout).
	DefaultProducerCloseTimeout = 5 * time.Second
	// DefaultProducerLinger is the kgo.ProducerLinger NewProducer sets
	// before ProducerConfig.Opts (and NewTransactionalProducer on the
	// shared client, before the source's Config.Opts): 5ms, as
	// confluent.NewProducer's linger.ms and the Java producer's default
	// since Kafka 4.0. kgo waits up to that long to fill a partition's
	// batch, so a steady flow goes out in fewer, larger produce requests,
	// which cost the broker less per record; a message waits at most that
	// much longer for its delivery report, and its input's commit with
	// it. In the benchmark's consume → produce on Apache Kafka, 5ms rather
	// than 0 made a third fewer produce requests and about 8% more
	// throughput (docs/performance.md).
	DefaultProducerLinger = 5 * time.Millisecond
	// DefaultProducerMaxBufferedBytes is the kgo.MaxBufferedBytes
	// NewProducer sets before ProducerConfig.Opts (kgo's default is no
	// limit, with 50,000 records at most): the key, value and header
	// bytes of the messages kgo holds until their delivery, across every
	// Produce stage and dead letter. A full buffer is backpressure (a
	// Produce stage waits for room); a message larger than the limit fails
	// at once with MESSAGE_TOO_LARGE.
	DefaultProducerMaxBufferedBytes = 64 << 20
	// DefaultProducerMetadataMinAge is the kgo.MetadataMinAge NewProducer
	// (and NewTransactionalProducer) sets before the options of the
	// user: the shortest time between two metadata requests, which is
	// also how soon kgo learns where a partition it could not write to
	// went (kgo's default is 5s). A partition that answers
	// NOT_LEADER_FOR_PARTITION without naming the new leader (a topic
	// just created, whose leader is not ready yet; a broker restarting)
	// holds its records until that request: with kgo's 5s, a Produce
	// stage writing to it stalls, and with it the commits of every input
	// partition that has a record for it, until the in-flight limit
	// stops the consumer. Java's producer and librdkafka retry within
	// 100ms to 1s.
	DefaultProducerMetadataMinAge = time.Second
	// DefaultDeliveryTimeout is the ProducerConfig.DeliveryTimeout used
	// when it is zero (librdkafka's message.timeout.ms in package sink/confluent).
	DefaultDeliveryTimeout = 30 * time.Second
)

// ProducerConfig configures a [Producer]. NewProducer copies it.
type ProducerConfig struct {
	// Brokers is the bootstrap list, host:port each (kgo.SeedBrokers).
	// Required.
	Brokers []string
	// Logger receives franz-go's logs (kgo.WithLogger) and the
	// producer's own warnings; nil discards them.
	Logger *slog.Logger
	// CloseTimeout bounds how long [Producer.Close] waits for the
	// deliveries still outstanding before it gives up on them. Zero means
	// [DefaultProducerCloseTimeout]; negative is an error.
	CloseTimeout time.Duration
	// DeliveryTimeout bounds each message's delivery, kgo's retries
	// included: past it (at most a 16th of it, and at most 100ms, later:
	// the messages sent within such a window share one deadline) the
	// message fails (a transient error: a Produce
	// stage stops Run, a dead letter is retried under Run's retry
	// policy) instead of being retried for ever. It is each record's
	// produce context, not kgo.RecordDeliveryTimeout (refused), which kgo
	// counts from the record's timestamp: a dead letter keeps the invalid
	// record's, and would fail at once when that record is older than the
	// timeout. Zero means [DefaultDeliveryTimeout]; negative is an error.
	DeliveryTimeout time.Duration
	// Opts are passed to kgo.NewClient after the producer's defaults
	// (kgo's acks=all and idempotent writes, kgo.ProducerLinger
	// [DefaultProducerLinger], kgo.MaxBufferedBytes
	// [DefaultProducerMaxBufferedBytes], kgo.MetadataMinAge
	// [DefaultProducerMetadataMinAge]): TLS, SASL, compression, batch and
	// buffer sizes, acks and so on. kgo.DisableIdempotentWrite with more
	// than one produce request in flight lets kgo's retries reorder a
	// partition's records, dead letters included (up to 1024 of a
	// partition's dead letters are in flight at once). The options the
	// producer relies on are refused by NewProducer with an error naming
	// them (see the package documentation, "Producing").
	Opts []kgo.Opt
	// SkipTopicCheck turns off the checks that the topics the producer
	// writes to exist: the dead-letter topic (Producer.DeadLetter), which
	// pipeline.Run checks before the source starts, and each Produce
	// stage's topic, checked when the first graph using it is built. A
	// missing topic is otherwise an error naming it and its role (wrapping
	// sluice.ErrMissingTopic) at start, instead of a failure at the
	// first record produced to it. Set it when topics are created after
	// the consumer starts, or by the brokers on first use
	// (auto.create.topics.enable). A cluster that does not answer the
	// check within 10s is no error: the check is logged and skipped.
	SkipTopicCheck bool
}

func (c ProducerConfig) validate() error {
	if err := rebalance.CheckBrokers("franz", "ProducerConfig.Brokers", c.Brokers); err != nil {
		return err
	}
	if c.CloseTimeout < 0 {
		return fmt.Errorf("franz: ProducerConfig.CloseTimeout = %v: want 0 (the default, %v) or more", c.CloseTimeout, DefaultProducerCloseTimeout)
	}
	if c.DeliveryTimeout < 0 {
		return fmt.Errorf("franz: ProducerConfig.DeliveryTimeout = %v: want 0 (the default, %v) or more", c.DeliveryTimeout, DefaultDeliveryTimeout)
	}
	for i, o := range c.Opts {
		if o == nil {
			return fmt.Errorf("franz: ProducerConfig.Opts[%d] is nil", i)
		}
	}
	return nil
}

// reservedProducerOpts lists the options NewProducer refuses in
// ProducerConfig.Opts.
var reservedProducerOpts = []reservedOpt{
	{kgo.SeedBrokers, "use ProducerConfig.Brokers"},
	{kgo.WithLogger, "use ProducerConfig.Logger"},
	{kgo.TransactionalID, "the producer is not transactional: an input commits after its delivery report, through the source's consumer group"},
	{kgo.RecordDeliveryTimeout, "kgo counts it from the record's timestamp, which a dead letter keeps from the invalid record: use ProducerConfig.DeliveryTimeout"},
	{kgo.ManualFlushing, "the producer relies on kgo flushing by itself: with manual flushing nothing is sent until Close"},
	{kgo.DefaultProduceTopicAlways, "every message goes to the topic of its Produce stage or dead-letter destination"},
	{kgo.ConsumerGroup, "the producer does not consume (use franz.NewSource)"},
	{kgo.ConsumeTopics, "the producer does not consume (use franz.NewSource)"},
	{kgo.ConsumeRegex, "the producer does not consume (use franz.NewSource)"},
	{kgo.ConsumePartitions, "the producer does not consume (use franz.NewSource)"},
	{kgo.ShareGroup, "the producer does not consume (use franz.NewSource)"},
}

// checkProducerOpts returns kgo's validation error for opts, or an error
// naming the first of reservedProducerOpts they set.
func checkProducerOpts(opts []kgo.Opt) error {
	return checkReserved("ProducerConfig.Opts", nil, opts, reservedProducerOpts)
}

// producerOpts validates cfg and returns the options NewProducer creates
// its client with.
func producerOpts(cfg ProducerConfig, logger *slog.Logger) ([]kgo.Opt, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkProducerOpts(cfg.Opts); err != nil {
		return nil, err
	}
	opts := append([]kgo.Opt{kgo.ProducerLinger(DefaultProducerLinger), kgo.MaxBufferedBytes(DefaultProducerMaxBufferedBytes),
		kgo.MetadataMinAge(DefaultProducerMetadataMinAge)}, cfg.Opts...)
	return append(opts, kgo.SeedBrokers(cfg.Brokers...), kgo.WithLogger(slogAdapter{log: logger})), nil
}
