package confluent

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/librdkafka"
)

// DefaultProducerCloseTimeout is how long [Producer.Close] waits for outstanding
// deliveries unless [ProducerConfig.CloseTimeout] says otherwise.
const DefaultProducerCloseTimeout = 5 * time.Second

// ProducerConfig configures a [Producer].
type ProducerConfig struct {
	// Brokers is the bootstrap list, host:port each. Required.
	Brokers []string
	// Logger receives librdkafka's logs and producer errors; nil
	// discards them.
	Logger *slog.Logger
	// CloseTimeout bounds how long [Producer.Close] waits for the
	// deliveries still outstanding before it gives up on them. Zero means
	// [DefaultCloseTimeout]; negative is an error.
	CloseTimeout time.Duration
	// Overrides are librdkafka producer properties applied on top of the
	// defaults (acks=all, enable.idempotence=true, linger.ms=5,
	// message.timeout.ms=30000): TLS, SASL, compression and so on.
	// Values are strings, bools or numbers of any Go integer or float type
	// (JSON and YAML decoders produce float64), converted as for
	// source.Config.Overrides: a number becomes an int, a non-integral one
	// is an error naming the key, except for librdkafka's float properties
	// (linger.ms), which get it as text. The producer logs its
	// configuration at debug level, with the values of secret properties
	// (passwords, keys, tokens, every sasl.* and ssl.* property but names,
	// algorithms and public locations) redacted.
	// Turning enable.idempotence off lets librdkafka's retries reorder a
	// partition's messages, dead letters included (up to 1024 of a
	// partition's dead letters are in flight at once). bootstrap.servers
	// (use Brokers) and the go.* properties of confluent-kafka-go (the
	// sink depends on their values) cannot be set.
	Overrides map[string]any
	// SkipTopicCheck turns off the checks that the topics the producer
	// writes to exist: the dead-letter topic (Producer.DeadLetter), which
	// pipeline.Run checks before the source starts, and each Produce
	// stage's topic, checked when the first graph using it is built. A
	// missing topic is otherwise an error naming it and its role (wrapping
	// sluice.ErrMissingTopic) at start, instead of a failure at the
	// first record produced to it. Set it when topics are created after
	// the consumer starts, or by the brokers on first use
	// (auto.create.topics.enable). A cluster that does not answer the check
	// within 10s is no error: the check is logged and skipped.
	SkipTopicCheck bool
}

// defaultProducerProperties are the librdkafka properties NewProducer
// starts from. linger.ms=5 lets librdkafka batch messages of many
// partitions into one request; it costs at most 5 ms of latency and no
// safety, because an input commits only after its delivery report.
//
// queue.buffering.max.kbytes bounds the copies of undelivered messages
// librdkafka keeps (all stages and dead letters of the producer together)
// at 256 MiB, pipeline's default in-flight byte budget, instead of
// librdkafka's 1 GiB: past it Produce says the queue is full, and a stage
// waits for deliveries (backpressure, never a drop).
func defaultProducerProperties() kafka.ConfigMap {
	return kafka.ConfigMap{
		"acks":                       "all",
		"enable.idempotence":         true,
		"linger.ms":                  5,
		"message.timeout.ms":         30000,
		"queue.buffering.max.kbytes": 256 << 10,
	}
}

// defaultQueueBufferingMaxMessages is librdkafka's default of
// queue.buffering.max.messages.
const defaultQueueBufferingMaxMessages = 100000

// maxBufferedMessages returns queue.buffering.max.messages of m, a
// configuration NewProducer validated (librdkafka accepted it), read as
// librdkafka reads it (see strtol), or librdkafka's default when m does
// not set it.
func maxBufferedMessages(m kafka.ConfigMap) int {
	v, ok := m["queue.buffering.max.messages"]
	if !ok {
		return defaultQueueBufferingMaxMessages
	}
	n, ok := strtol(fmt.Sprint(v))
	if !ok {
		return defaultQueueBufferingMaxMessages
	}
	return n
}

// strtol reads the integer s starts with as librdkafka reads the text of
// an integer property (C's strtol with base 0): after spaces and a sign,
// 0x or 0X starts hex digits, a leading 0 octal ones, any other digit
// decimal ones; what follows the digits is ignored. ok is false when no
// digit starts s (librdkafka refuses it). Values past the int32 range
// (librdkafka refuses them too) are cut to its bounds.
func strtol(s string) (n int, ok bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digitValue(s[2]) < 16:
		base, s = 16, s[2:]
	case s != "" && s[0] == '0':
		base = 8
	}
	i := 0
	for ; i < len(s) && digitValue(s[i]) < base; i++ {
		n = min(n*base+digitValue(s[i]), math.MaxInt32+1)
	}
	if i == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// digitValue is the value of the digit c in bases up to 16, or 16 when c
// is no such digit.
func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return 16
}

// eventsChannelSize is the capacity of the producer's Events channel.
const eventsChannelSize = 1024

// producerProperties validates cfg and returns the librdkafka
// configuration NewProducer creates its client with.
func producerProperties(cfg ProducerConfig) (kafka.ConfigMap, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("confluent: ProducerConfig.Brokers is empty")
	}
	for i, b := range cfg.Brokers {
		if strings.TrimSpace(b) == "" {
			return nil, fmt.Errorf("confluent: ProducerConfig.Brokers[%d] is empty", i)
		}
	}
	if cfg.CloseTimeout < 0 {
		return nil, fmt.Errorf("confluent: ProducerConfig.CloseTimeout is %v, want 0 (the default, %v) or more", cfg.CloseTimeout, DefaultProducerCloseTimeout)
	}
	m := defaultProducerProperties()
	for k := range cfg.Overrides {
		if k == "bootstrap.servers" || strings.HasPrefix(k, "go.") {
			return nil, fmt.Errorf("confluent: ProducerConfig.Overrides[%q] cannot be overridden", k)
		}
	}
	ov, err := librdkafka.NormalizeOverrides("confluent: ProducerConfig.Overrides", cfg.Overrides)
	if err != nil {
		return nil, err
	}
	for k, v := range ov {
		m[k] = v
	}
	m["bootstrap.servers"] = strings.Join(cfg.Brokers, ",")
	m["go.logs.channel.enable"] = true
	// A delivery report is read for its Opaque (the ticket) and its error
	// only: without this, confluent-kafka-go copies every message's key
	// and value back into Go memory for its report.
	m["go.delivery.report.fields"] = "none"
	// Every delivery report goes to its receiver's own channel; the
	// producer's Events channel carries only errors and other events,
	// which Producer.events reads as they come, and ProduceChannel is
	// unused. confluent-kafka-go's defaults (1000000 each) allocate 24 MB
	// of channel buffers per producer up front.
	m["go.events.channel.size"] = eventsChannelSize
	m["go.produce.channel.size"] = 0
	return m, nil
}
