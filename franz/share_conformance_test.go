package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// shareConformanceLimit is the ShareSource's MaxDeliveries in
// TestShareConformance, below the broker's delivery count limit (5).
const shareConformanceLimit = 3

// TestShareConformance runs the share scenarios of testkit/sourcetest on
// the share source. On kfake, share group heartbeats come every 100 ms
// (Apache Kafka's test clusters use 250 ms already).
func TestShareConformance(t *testing.T) {
	b := kafkatest.NewBroker(t, kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
	})))
	sourcetest.RunShare(t, kafkadriver.ShareDriver{Broker: b, Limit: shareConformanceLimit,
		Source: func(t *testing.T, group, topic string) sluice.Source {
			src, err := NewShareSource(ShareConfig{
				Brokers:       b.Addrs(),
				Group:         group,
				Topics:        []string{topic},
				MaxDeliveries: shareConformanceLimit,
				CloseTimeout:  2 * time.Second,
				Logger:        kafkatest.Logger(t),
				Opts:          []kgo.Opt{kgo.ShareMaxRecords(50)},
			})
			if err != nil {
				t.Fatal(err)
			}
			return src
		}})
}
