package integration

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// TestKafkaSourceConformance runs testkit/sourcetest (the same exact
// commits as the fake and the franz source) on the librdkafka source in
// classic groups.
func TestKafkaSourceConformance(t *testing.T) {
	b := kafkatest.NewBroker(t)
	sourcetest.Run(t, kafkadriver.Driver{Broker: b, Source: func(t *testing.T, group, topic string) sluice.Source {
		return newSource(t, b, group, topic, nil)
	}})
}

// TestKafkaSourceConformanceConsumerProtocol is TestKafkaSourceConformance
// in KIP-848 groups (group.protocol=consumer: the broker assigns).
func TestKafkaSourceConformanceConsumerProtocol(t *testing.T) {
	b := kafkatest.NewBroker(t)
	sourcetest.Run(t, kafkadriver.Driver{Broker: b, Source: func(t *testing.T, group, topic string) sluice.Source {
		// newSource's heartbeat and session properties are classic-only.
		return sourceOf(t, b, group, topic, source.Config{CommitInterval: 50 * time.Millisecond,
			Overrides: map[string]any{"group.protocol": "consumer"}})
	}})
}
