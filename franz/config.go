package franz

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
)

const (
	// DefaultCommitInterval is the CommitInterval used when Config leaves
	// it zero; it equals sluice.DefaultCommitInterval.
	DefaultCommitInterval = sluice.DefaultCommitInterval
	// DefaultCloseTimeout is the CloseTimeout used when Config (or
	// ShareConfig) leaves it zero; it equals sluice.DefaultCloseTimeout.
	DefaultCloseTimeout = sluice.DefaultCloseTimeout
)

// Config configures a [Source]: the client-independent
// [sluice.GroupConfig] (see its fields' contracts) and the kgo options
// of Opts. Brokers, Group and Topics are
// required; everything else has a default. NewSource copies it: changing
// it (or the slices it holds) afterwards has no effect. Its errors name
// the promoted fields as Config.<Field>.
//
// With franz-go, Topics are exact names (kgo.ConsumeTopics; kgo.ConsumeRegex
// is refused in Opts), Brokers and Group are kgo.SeedBrokers and
// kgo.ConsumerGroup, and Logger receives franz-go's logs through
// kgo.WithLogger.
type Config struct {
	// GroupConfig is the client-independent half: Brokers, Group,
	// Topics, CommitInterval, CloseTimeout, OffsetStore, Logger and
	// SkipTopicCheck, promoted (cfg.Brokers).
	sluice.GroupConfig

	// Opts are passed to kgo.NewClient after the source's defaults: TLS
	// (kgo.DialTLSConfig), SASL (kgo.SASL), fetch tuning, kgo.Balancers,
	// kgo.ServerSideBalancer, the group timeouts and so on. The options the
	// source sets itself and relies on are refused by NewSource with an
	// error naming them (see the package documentation, "Defaults and options").
	Opts []kgo.Opt
}

// settings are the fields the client-independent core validates and uses.
func (c Config) settings() rebalance.Settings {
	return rebalance.Settings{Prefix: "franz", GroupConfig: c.GroupConfig}
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
