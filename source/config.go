package source

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// DefaultCommitInterval is the CommitInterval used when Config leaves it zero.
const DefaultCommitInterval = rebalance.DefaultCommitInterval

// Config configures a [Source] source. Brokers, Group and Topics are
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
	// from the runtime and commits them in the background. The source
	// sends one commit at a time: when the previous one is still
	// unanswered (librdkafka retries some rejections itself), the next
	// goes as soon as it is answered. Zero means DefaultCommitInterval; it
	// must not be negative, and a non-zero value must be at least 1ms.
	CommitInterval time.Duration

	// CloseTimeout bounds what the source does past the runtime's drain
	// when it stops: the final synchronous commit (with the wait for the
	// background commit in flight before it, and its retries while the
	// group is rebalancing) and leaving the group share its first 40% (leaving
	// gets at least 10%), closing the client gets the rest (librdkafka may wait 5s for its LeaveGroup
	// to be answered: below about 9s a slow coordinator makes Run report a
	// Close that librdkafka would have ended). Each synchronous commit on
	// a revoke is bounded by the same 40%. Past the bound Run returns an
	// error naming what did not finish (see Source.Run). Zero means
	// DefaultCloseTimeout (10s); it must not be negative, and a non-zero
	// value must be at least 100ms. Its 40% are part of the default
	// max.poll.interval.ms (see the package documentation, "Timeouts").
	CloseTimeout time.Duration

	// OffsetStore, when not nil, is the sink that keeps the partitions'
	// offsets in its own transactions (sluice.OffsetStore): each newly
	// assigned partition starts where it says, not at the group's commit,
	// and its previous owner is fenced (when and how the source calls it:
	// the package documentation, "Offset store"). Run refuses it with a
	// transactional producer (confluent.NewTransactionalProducer).
	OffsetStore sluice.OffsetStore

	// Logger receives librdkafka's logs and the source's own events.
	// Nil discards them.
	Logger *slog.Logger

	// Overrides are librdkafka configuration properties applied on top
	// of the source's defaults: TLS, SASL, fetch tuning, group.protocol,
	// partition.assignment.strategy, the group timeouts and so on. Values
	// are strings, bools or numbers of any Go integer or float type (JSON
	// and YAML decoders produce float64): NewSource converts numbers to
	// int, and rejects a non-integral one (except for librdkafka's float
	// properties, which get it as text) with an error naming the key. An
	// override of max.poll.interval.ms must leave room for a revoke (drain
	// timeout + 40% of CloseTimeout), or Run fails before calling any Group
	// method but DrainTimeout. The properties the source
	// relies on (bootstrap.servers, group.id, enable.auto.commit,
	// enable.auto.offset.store, auto.commit.interval.ms and the go.*
	// properties of confluent-kafka-go) cannot be overridden; use the
	// dedicated fields. The source logs its configuration at debug level,
	// with the values of secret properties (passwords, keys, tokens, every
	// sasl.* and ssl.* property but names, algorithms and public locations,
	// so sasl.oauthbearer.config too) redacted; package sink/confluent converts and
	// logs its Overrides the same way.
	//
	// Unless overridden, librdkafka's prefetch follows the runtime's
	// in-flight byte budget (pipeline.WithMaxInFlightBytes), whatever the
	// number of partitions: queued.max.messages.kbytes is an eighth of it
	// (at least 1 MiB, at most librdkafka's default 64 MiB; librdkafka
	// lowers fetch.max.bytes to it), queued.min.messages that size over
	// 128 bytes (1000 to librdkafka's default 100000).
	Overrides map[string]any

	// SkipTopicCheck turns off the check Run makes before it joins the
	// group: that every topic of Topics (regular expressions aside)
	// exists. A missing topic is otherwise an error naming it (wrapping
	// sluice.ErrMissingTopic), instead of a consumer that waits without
	// a word for a topic nobody writes to. Set it when the topics are
	// created after the consumer starts. A cluster that does not answer
	// the check within 10s is no error: the check is logged and skipped.
	SkipTopicCheck bool
}

// reserved are the properties the source sets itself and depends on.
var reserved = map[string]string{
	"bootstrap.servers":               "use Config.Brokers",
	"metadata.broker.list":            "use Config.Brokers",
	"group.id":                        "use Config.Group",
	"enable.auto.commit":              "the source commits the offsets the runtime reports itself, one commit at a time",
	"enable.auto.offset.store":        "the source commits the offsets the runtime reports, never offsets stored in librdkafka",
	"auto.commit.interval.ms":         "use Config.CommitInterval (librdkafka's auto-commit is off)",
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

// settings are the fields the client-independent core validates and uses.
func (c Config) settings() rebalance.Settings {
	return rebalance.Settings{Prefix: "source", Brokers: c.Brokers, Group: c.Group, Topics: c.Topics,
		CommitInterval: c.CommitInterval, CloseTimeout: c.CloseTimeout, OffsetStore: c.OffsetStore}
}

func (c Config) validate() error {
	if err := c.settings().Validate(); err != nil {
		return err
	}
	for k := range c.Overrides {
		if why, ok := reserved[k]; ok {
			return fmt.Errorf("source: Config.Overrides[%q] cannot be overridden: %s", k, why)
		}
		if strings.HasPrefix(k, "go.") {
			return fmt.Errorf("source: Config.Overrides[%q]: go.* properties are not supported", k)
		}
	}
	return nil
}

// normalizedOverrides returns a copy of Overrides with every value
// converted as librdkafka.NormalizeOverride says (shared with package sink/confluent).
func (c Config) normalizedOverrides() (map[string]any, error) {
	return librdkafka.NormalizeOverrides("source: Config.Overrides", c.Overrides)
}

// configMap builds the librdkafka configuration for a group whose drain
// timeout is drain. It assumes validate passed and Overrides are
// normalized; its errors name the override that contradicts drain.
func (c Config) configMap(drain time.Duration) (kafka.ConfigMap, error) {
	m := defaults()
	if c.consumerProtocol() {
		// KIP-848: the broker assigns; librdkafka rejects a client-side
		// assignor with the consumer protocol.
		delete(m, "partition.assignment.strategy")
	}
	if err := c.groupTimeouts(m, drain); err != nil {
		return nil, err
	}
	for k, v := range c.Overrides {
		m[k] = v
	}
	m["bootstrap.servers"] = strings.Join(c.Brokers, ",")
	m["group.id"] = c.Group
	// The source sends every commit itself (internal/rebalance): librdkafka's
	// auto-committer would send stored offsets behind its back and retry
	// them out of order, and commit on unassign and close.
	m["enable.auto.commit"] = false
	m["enable.auto.offset.store"] = false
	m["go.logs.channel.enable"] = true
	return m, nil
}
