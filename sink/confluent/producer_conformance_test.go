package confluent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/sink/confluent"
)

// TestProducerConformance runs internal/producertest, whose checks of the
// producer contract every backend passes alike (package franz runs them
// too).
func TestProducerConformance(t *testing.T) {
	producertest.Run(t, producertest.Harness[*confluent.Producer]{
		Name:        "confluent",
		NewProducer: newConformanceProducer,
		Unstarted:   func() *confluent.Producer { return &confluent.Producer{} },
		Pending:     confluent.Pending,
		ErrClosed:   confluent.ErrClosed,
		NewSource:   producertest.SourceOf(newSource),
		SourceName:  "source",
		Errors: producertest.Errors{
			TooLarge:      "Message size too large",
			UnknownTopic:  "Unknown topic",
			InvalidRecord: "Broker failed to validate record",
			TimedOut:      func(time.Duration) string { return "Message timed out" },
			Fatal:         "Fatal error",
			IsInvalidRecord: func(err error) bool {
				var ke kafka.Error
				return errors.As(err, &ke) && ke.Code() == kafka.ErrInvalidRecord
			},
		},
		InjectFatal: confluent.InjectFatal,
	})
}

// newConformanceProducer maps the suite's settings to librdkafka's.
func newConformanceProducer(cfg producertest.Config) (*confluent.Producer, error) {
	overrides := map[string]any{}
	if cfg.FastRetries {
		overrides["retry.backoff.ms"] = 20
		overrides["retry.backoff.max.ms"] = 50
	}
	if cfg.MaxMessageBytes > 0 {
		overrides["message.max.bytes"] = cfg.MaxMessageBytes
	}
	if cfg.UnknownTopicFailsFast {
		overrides["topic.metadata.propagation.max.ms"] = 100
	}
	if cfg.DeliveryTimeout > 0 {
		overrides["message.timeout.ms"] = int(cfg.DeliveryTimeout / time.Millisecond)
	}
	return confluent.NewProducer(confluent.ProducerConfig{
		Brokers:        cfg.Brokers,
		CloseTimeout:   cfg.CloseTimeout,
		SkipTopicCheck: cfg.SkipTopicCheck,
		Overrides:      overrides,
	})
}
