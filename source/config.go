package source

import (
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// DefaultCommitInterval is the CommitInterval used when Config leaves it
// zero; it equals sluice.DefaultCommitInterval.
const DefaultCommitInterval = sluice.DefaultCommitInterval

// Config configures a [Source]: the client-independent
// [sluice.GroupConfig] (see its fields' contracts) and the librdkafka
// properties of Overrides. Brokers, Group
// and Topics are required; everything else has a default. NewSource
// copies it: changing it (or the slices and map it holds) afterwards has
// no effect. Its errors name the promoted fields as Config.<Field>.
//
// With librdkafka, Topics may hold regular expressions (a name starting
// with "^"); Brokers and Group are bootstrap.servers and group.id, which
// Overrides cannot set. CloseTimeout: librdkafka may wait 5s for its
// LeaveGroup to be answered when the client closes, so below about 9s a
// slow coordinator makes Run report a Close that librdkafka would have
// ended; the 40% of CloseTimeout that bounds a revoke's commit is part of
// the default max.poll.interval.ms (see the package documentation,
// "Timeouts"). A commit librdkafka retries itself after a rejection
// holds back the next one (one commit at a time). Logger receives
// librdkafka's log events.
type Config struct {
	// GroupConfig is the client-independent half: Brokers, Group,
	// Topics, CommitInterval, CloseTimeout, OffsetStore, Logger and
	// SkipTopicCheck, promoted (cfg.Brokers).
	sluice.GroupConfig

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
	// number of partitions: queued.max.messages.kbytes is a 256th of it
	// (at least 1 MiB, so 1 MiB at the default budget, at most
	// librdkafka's default 64 MiB; librdkafka lowers fetch.max.bytes to
	// it), queued.min.messages that size over 128 bytes (1000 to
	// librdkafka's default 100000). A larger queue costs CPU per record
	// and memory without adding throughput (docs/performance.md); raise
	// it only for a link whose round trip is long against what 1 MiB
	// takes to cross it.
	Overrides map[string]any
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
	return rebalance.Settings{Prefix: "source", GroupConfig: c.GroupConfig}
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
