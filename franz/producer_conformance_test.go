package franz_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
)

// TestProducerConformance runs internal/producertest, whose checks of the
// producer contract every backend passes alike (package sink/confluent runs them
// too).
func TestProducerConformance(t *testing.T) {
	producertest.Run(t, producertest.Harness[*franz.Producer]{
		Name:        "franz",
		NewProducer: newConformanceProducer,
		Unstarted:   func() *franz.Producer { return &franz.Producer{} },
		Pending:     franz.ProducerPending,
		ErrClosed:   franz.ErrClosed,
		NewSource:   producertest.SourceOf(newSource),
		SourceName:  "franz",
		Errors: producertest.Errors{
			TooLarge:        "MESSAGE_TOO_LARGE",
			UnknownTopic:    "UNKNOWN_TOPIC_OR_PARTITION",
			InvalidRecord:   "INVALID_RECORD",
			TimedOut:        func(d time.Duration) string { return fmt.Sprintf("not delivered within the delivery timeout (%v)", d) },
			IsInvalidRecord: func(err error) bool { return errors.Is(err, kerr.InvalidRecord) },
		},
	})
}

// newConformanceProducer maps the suite's settings to kgo's.
func newConformanceProducer(cfg producertest.Config) (*franz.Producer, error) {
	var opts []kgo.Opt
	if cfg.FastRetries {
		// kgo waits for a metadata refresh (at most every
		// MetadataMinAge, 5s by default) before it retries a
		// partition's failed produce.
		opts = append(opts, kgo.MetadataMinAge(20*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	}
	if cfg.MaxMessageBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(cfg.MaxMessageBytes)))
	}
	if cfg.UnknownTopicFailsFast {
		opts = append(opts, kgo.UnknownTopicRetries(1))
	}
	return franz.NewProducer(franz.ProducerConfig{
		Brokers:         cfg.Brokers,
		CloseTimeout:    cfg.CloseTimeout,
		DeliveryTimeout: cfg.DeliveryTimeout,
		SkipTopicCheck:  cfg.SkipTopicCheck,
		Opts:            opts,
	})
}
