package sluice

import (
	"log/slog"
	"time"
)

const (
	// DefaultCommitInterval is the GroupConfig.CommitInterval the Kafka
	// consumer-group sources use when it is zero.
	DefaultCommitInterval = time.Second
	// DefaultCloseTimeout is the GroupConfig.CloseTimeout the Kafka
	// consumer-group sources use when it is zero.
	DefaultCloseTimeout = 10 * time.Second
)

// GroupConfig is the half of a Kafka consumer-group source's
// configuration that does not depend on the client: it means the same
// for package source (librdkafka) and package franz (franz-go). A program
// builds it once and embeds it in the client's Config (source.Config,
// franz.Config) next to that client's own options, so changing client
// changes one literal:
//
//	g := sluice.GroupConfig{Brokers: brokers, Group: "billing", Topics: []string{"orders"}}
//	src, err := franz.NewSource(franz.Config{GroupConfig: g})
//
// Brokers, Group and Topics are required; everything else has a default.
// The sources' NewSource copies it (changing it, or the slices it holds,
// afterwards has no effect) and validates it: an error names the
// offending field as Config.<Field> (Config.Brokers, Config.Topics[1],
// ...).
type GroupConfig struct {
	// Brokers is the bootstrap list, host:port each (librdkafka's
	// bootstrap.servers, kgo.SeedBrokers). It must not be empty, and no
	// entry may be blank or hold a comma-separated list.
	Brokers []string

	// Group is the consumer group id (librdkafka's group.id,
	// kgo.ConsumerGroup). It must not be blank.
	Group string

	// Topics are the topics to subscribe to; there must be at least one,
	// and none blank. librdkafka accepts a name starting with "^" as a
	// regular expression; franz-go takes exact names only (kgo.ConsumeRegex
	// is refused in franz.Config.Opts).
	Topics []string

	// CommitInterval is how often the source collects processed offsets
	// from the runtime and commits them in the background. The source
	// sends one commit at a time: when the previous one is still
	// unanswered, the next goes as soon as it is answered. Zero means
	// DefaultCommitInterval; it must not be negative, and a non-zero value
	// must be at least 1ms.
	CommitInterval time.Duration

	// CloseTimeout bounds what the source does past the runtime's drain
	// when it stops: the final synchronous commit (with the wait for the
	// background commit in flight before it, and its retries while the
	// group is rebalancing) and leaving the group share its first 40%,
	// closing the client gets the rest. Each synchronous commit on a
	// revoke is bounded by the same 40%, which is also part of the
	// client's default rebalance timeout (see the sources' package
	// documentation, "Timeouts"). Past the bound Run returns an error
	// naming what did not finish. Zero means DefaultCloseTimeout; it must
	// not be negative, and a non-zero value must be at least 100ms.
	CloseTimeout time.Duration

	// OffsetStore, when not nil, is the sink that keeps the partitions'
	// offsets in its own transactions ([OffsetStore]): each newly
	// assigned partition starts where it says, not at the group's commit,
	// and its previous owner is fenced (when and how the sources call it:
	// their package documentation, "Offset store"). Run refuses it with a
	// transactional producer bound to the source
	// (confluent.NewTransactionalProducer, franz.NewTransactionalProducer).
	OffsetStore OffsetStore

	// Logger receives the client's logs (librdkafka's log events; franz-go's
	// through kgo.WithLogger, its errors and warnings at those levels, its
	// info and debug lines at Debug) and the source's own events. Nil
	// discards them.
	Logger *slog.Logger

	// SkipTopicCheck turns off the check Run makes before it joins the
	// group: that every topic of Topics (regular expressions aside)
	// exists. A missing topic is otherwise an error naming it (wrapping
	// ErrMissingTopic), instead of a consumer that waits without a word
	// for a topic nobody writes to. Set it when the topics are created
	// after the consumer starts. A cluster that does not answer the check
	// within 10s is no error: the check is logged and skipped.
	SkipTopicCheck bool
}
