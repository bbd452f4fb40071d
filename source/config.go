package source

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// DefaultCommitInterval is the CommitInterval used when Config leaves it zero.
const DefaultCommitInterval = time.Second

// Config configures a [Kafka] source. Brokers, Group and Topics are
// required; everything else has a default.
type Config struct {
	// Brokers is the bootstrap list, host:port each (bootstrap.servers).
	Brokers []string

	// Group is the consumer group id (group.id).
	Group string

	// Topics are the topics to subscribe to. A name starting with "^" is
	// a regular expression, as in librdkafka.
	Topics []string

	// CommitInterval is how often the source collects processed offsets
	// from the runtime and how often librdkafka commits them in the
	// background (auto.commit.interval.ms). Zero means
	// DefaultCommitInterval; it must not be negative.
	CommitInterval time.Duration

	// Logger receives librdkafka's logs and the source's own events.
	// Nil discards them.
	Logger *slog.Logger

	// Overrides are librdkafka configuration properties applied on top
	// of the source's defaults: TLS, SASL, fetch tuning, group.protocol,
	// partition.assignment.strategy and so on. Values are strings, bools,
	// ints or float64s, as in kafka.ConfigMap. The properties the source
	// relies on (bootstrap.servers, group.id, enable.auto.commit,
	// enable.auto.offset.store, auto.commit.interval.ms and the go.*
	// properties of confluent-kafka-go) cannot be overridden; use the
	// dedicated fields. Values of secret-looking properties (passwords,
	// keys, secrets, tokens, JAAS configs) are never logged.
	Overrides map[string]any
}

// reserved are the properties the source sets itself and depends on.
var reserved = map[string]string{
	"bootstrap.servers":               "use Config.Brokers",
	"metadata.broker.list":            "use Config.Brokers",
	"group.id":                        "use Config.Group",
	"enable.auto.commit":              "the source commits the offsets the runtime reports",
	"enable.auto.offset.store":        "the source stores the offsets the runtime reports",
	"auto.commit.interval.ms":         "use Config.CommitInterval",
	"go.application.rebalance.enable": "the source handles rebalances",
	"go.events.channel.enable":        "the source polls",
	"go.events.channel.size":          "the source polls",
	"go.logs.channel.enable":          "use Config.Logger",
	"go.logs.channel":                 "use Config.Logger",
}

// defaults are applied before Overrides. See the package documentation for
// why each is there.
func defaults() kafka.ConfigMap {
	return kafka.ConfigMap{
		"auto.offset.reset":             "earliest",
		"fetch.queue.backoff.ms":        10,
		"fetch.wait.max.ms":             100,
		"partition.assignment.strategy": "cooperative-sticky",
	}
}

func (c Config) validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("source: Config.Brokers is empty")
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || strings.Contains(b, ",") {
			return fmt.Errorf("source: Config.Brokers[%d] = %q: want one host:port", i, b)
		}
	}
	if strings.TrimSpace(c.Group) == "" {
		return errors.New("source: Config.Group is empty")
	}
	if len(c.Topics) == 0 {
		return errors.New("source: Config.Topics is empty")
	}
	for i, t := range c.Topics {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("source: Config.Topics[%d] is empty", i)
		}
	}
	if c.CommitInterval < 0 {
		return fmt.Errorf("source: Config.CommitInterval = %v: must not be negative", c.CommitInterval)
	}
	if c.CommitInterval > 0 && c.CommitInterval < time.Millisecond {
		return fmt.Errorf("source: Config.CommitInterval = %v: must be at least 1ms", c.CommitInterval)
	}
	for k, v := range c.Overrides {
		if why, ok := reserved[k]; ok {
			return fmt.Errorf("source: Config.Overrides[%q] cannot be overridden: %s", k, why)
		}
		if strings.HasPrefix(k, "go.") {
			return fmt.Errorf("source: Config.Overrides[%q]: go.* properties are not supported", k)
		}
		switch v.(type) {
		case string, bool, int, int32, int64, float64:
		default:
			return fmt.Errorf("source: Config.Overrides[%q]: unsupported value type %T (want string, bool, int or float64)", k, v)
		}
	}
	return nil
}

// configMap builds the librdkafka configuration. It assumes validate passed.
func (c Config) configMap() kafka.ConfigMap {
	m := defaults()
	if gp, ok := c.Overrides["group.protocol"]; ok && fmt.Sprint(gp) == "consumer" {
		// KIP-848: the broker assigns; librdkafka rejects a client-side
		// assignor with the consumer protocol.
		delete(m, "partition.assignment.strategy")
	}
	for k, v := range c.Overrides {
		m[k] = v
	}
	m["bootstrap.servers"] = strings.Join(c.Brokers, ",")
	m["group.id"] = c.Group
	m["enable.auto.commit"] = true
	m["enable.auto.offset.store"] = false
	m["auto.commit.interval.ms"] = int(c.commitInterval().Milliseconds())
	m["go.logs.channel.enable"] = true
	return m
}

func (c Config) commitInterval() time.Duration {
	if c.CommitInterval == 0 {
		return DefaultCommitInterval
	}
	return c.CommitInterval
}

// secretish reports whether the value of property k must never be logged.
func secretish(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "secret", "key", "token", "jaas", "sasl.username", "credential", "pem", "certificate"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// redacted renders m for logging with secret values replaced.
func redacted(m kafka.ConfigMap) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		v := "[redacted]"
		if !secretish(k) {
			switch x := m[k].(type) {
			case string:
				v = x
			case int:
				v = strconv.Itoa(x)
			default:
				v = fmt.Sprint(x)
			}
		}
		attrs = append(attrs, slog.String(k, v))
	}
	return attrs
}
