package franz

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// DefaultCommitInterval is the CommitInterval used when Config leaves it zero.
	DefaultCommitInterval = time.Second
	// DefaultCloseTimeout is the CloseTimeout used when Config leaves it zero.
	DefaultCloseTimeout = 10 * time.Second
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

	// Logger receives franz-go's logs (kgo.WithLogger, at Info level and
	// above unless the handler enables Debug) and the source's own
	// events. Nil discards them.
	Logger *slog.Logger

	// Opts are passed to kgo.NewClient after the source's defaults: TLS
	// (kgo.DialTLSConfig), SASL (kgo.SASL), fetch tuning, kgo.Balancers,
	// kgo.ServerSideBalancer, the group timeouts and so on. The options the
	// source sets itself and relies on are refused by NewSource with an
	// error naming them (see the package documentation, "Options").
	Opts []kgo.Opt
}

func (c Config) validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("franz: Config.Brokers is empty")
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || strings.Contains(b, ",") {
			return fmt.Errorf("franz: Config.Brokers[%d] = %q: want one host:port", i, b)
		}
	}
	if strings.TrimSpace(c.Group) == "" {
		return errors.New("franz: Config.Group is empty")
	}
	if len(c.Topics) == 0 {
		return errors.New("franz: Config.Topics is empty")
	}
	for i, t := range c.Topics {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("franz: Config.Topics[%d] is empty", i)
		}
	}
	if c.CommitInterval < 0 {
		return fmt.Errorf("franz: Config.CommitInterval = %v: must not be negative", c.CommitInterval)
	}
	if c.CommitInterval > 0 && c.CommitInterval < time.Millisecond {
		return fmt.Errorf("franz: Config.CommitInterval = %v: must be at least 1ms", c.CommitInterval)
	}
	if c.CloseTimeout < 0 {
		return fmt.Errorf("franz: Config.CloseTimeout = %v: must not be negative", c.CloseTimeout)
	}
	if c.CloseTimeout > 0 && c.CloseTimeout < 100*time.Millisecond {
		return fmt.Errorf("franz: Config.CloseTimeout = %v: must be at least 100ms", c.CloseTimeout)
	}
	for i, o := range c.Opts {
		if o == nil {
			return fmt.Errorf("franz: Config.Opts[%d] is nil", i)
		}
	}
	return nil
}

func (c Config) commitInterval() time.Duration {
	if c.CommitInterval == 0 {
		return DefaultCommitInterval
	}
	return c.CommitInterval
}

func (c Config) closeTimeout() time.Duration {
	if c.CloseTimeout == 0 {
		return DefaultCloseTimeout
	}
	return c.CloseTimeout
}

// commitTimeout bounds each synchronous commit (revoke, shutdown): 40% of
// CloseTimeout.
func (c Config) commitTimeout() time.Duration { return c.closeTimeout() * 2 / 5 }
