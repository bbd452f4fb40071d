package franz

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
)

const (
	// DefaultCommitInterval is the CommitInterval used when Config leaves it zero.
	DefaultCommitInterval = rebalance.DefaultCommitInterval
	// DefaultCloseTimeout is the CloseTimeout used when Config leaves it zero.
	DefaultCloseTimeout = rebalance.DefaultCloseTimeout
)

// Config configures a [Source]. Brokers, Group and Topics are required;
// everything else has a default. NewSource copies it: changing it (or the
// slices it holds) afterwards has no effect.
type Config struct {
	// Brokers is the bootstrap list, host:port each (kgo.SeedBrokers).
	Brokers []string

	// Group is the consumer group id (kgo.ConsumerGroup).
	Group string

	// Topics are the topics to subscribe to (kgo.ConsumeTopics), by exact
	// name. Regular expressions are not supported (kgo.ConsumeRegex is
	// refused in Opts).
	Topics []string

	// CommitInterval is how often the source collects processed offsets
	// from the runtime and commits them in the background, one commit at
	// a time. Zero means DefaultCommitInterval; it must not be negative,
	// and a non-zero value must be at least 1ms.
	CommitInterval time.Duration

	// CloseTimeout bounds what the source does past the runtime's drain
	// when it stops: the final commit (with the wait for the background
	// commit in flight before it) and leaving the group share its first
	// 40%, closing the client gets the rest. Each synchronous commit on a
	// revoke is bounded by the same 40%, which is also part of the derived
	// rebalance timeout (see the package documentation, "Timeouts"). Zero
	// means DefaultCloseTimeout; it must not be negative, and a non-zero
	// value must be at least 100ms.
	CloseTimeout time.Duration

	// OffsetStore, when not nil, is the sink that keeps the partitions'
	// offsets in its own transactions (sluice.OffsetStore): each newly
	// assigned partition starts where it says, not at the group's commit,
	// and its previous owner is fenced (when and how the source calls it:
	// the package documentation, "Offset store"). Run refuses it with a
	// transactional producer ([NewTransactionalProducer]).
	OffsetStore sluice.OffsetStore

	// Logger receives franz-go's logs (kgo.WithLogger: kgo's errors and
	// warnings at those levels, its info and debug lines at Debug) and
	// the source's own events. Nil discards them.
	Logger *slog.Logger

	// Opts are passed to kgo.NewClient after the source's defaults: TLS
	// (kgo.DialTLSConfig), SASL (kgo.SASL), fetch tuning, kgo.Balancers,
	// kgo.ServerSideBalancer, the group timeouts and so on. The options the
	// source sets itself and relies on are refused by NewSource with an
	// error naming them (see the package documentation, "Defaults and options").
	Opts []kgo.Opt

	// SkipTopicCheck turns off the check Run makes before it joins the
	// group: that every topic of Topics exists. A missing topic is
	// otherwise an error naming it (wrapping sluice.ErrMissingTopic),
	// instead of a consumer that waits without a word for a topic nobody
	// writes to. Set it when the topics are created after the consumer
	// starts. A cluster that does not answer the check within 10s is no
	// error: the check is logged and skipped.
	SkipTopicCheck bool
}

// settings are the fields the client-independent core validates and uses.
func (c Config) settings() rebalance.Settings {
	return rebalance.Settings{Prefix: "franz", Brokers: c.Brokers, Group: c.Group, Topics: c.Topics,
		CommitInterval: c.CommitInterval, CloseTimeout: c.CloseTimeout, OffsetStore: c.OffsetStore}
}

func (c Config) validate() error {
	if err := c.settings().Validate(); err != nil {
		return err
	}
	for i, o := range c.Opts {
		if o == nil {
			return fmt.Errorf("franz: Config.Opts[%d] is nil", i)
		}
	}
	return nil
}

func (c Config) closeTimeout() time.Duration {
	return rebalance.CloseTimeoutOrDefault(c.CloseTimeout)
}

// commitTimeout bounds each synchronous commit (revoke, shutdown): 40% of
// CloseTimeout.
func (c Config) commitTimeout() time.Duration { return rebalance.CommitTimeout(c.CloseTimeout) }
