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
// commits as the fake and the franz source) on the librdkafka source, in
// classic groups and in KIP-848 groups (group.protocol=consumer: the
// broker assigns).
func TestKafkaSourceConformance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		newSource func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source
	}{
		{"classic", func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			return newSource(t, b, group, topic, nil)
		}},
		{"consumer protocol", func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			// newSource's heartbeat and session properties are classic-only.
			return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond},
				Overrides: map[string]any{"group.protocol": "consumer"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := kafkatest.NewBroker(t)
			sourcetest.Run(t, kafkadriver.Driver{Broker: b, Source: func(t *testing.T, group, topic string) sluice.Source {
				return tc.newSource(t, b, group, topic)
			}})
		})
	}
}
