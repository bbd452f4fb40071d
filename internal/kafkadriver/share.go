package kafkadriver

import (
	"maps"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// ShareDriver is a [sourcetest.ShareDriver] whose topics and share groups
// live on Broker, for a share source (franz.NewShareSource):
//
//	sourcetest.RunShare(t, kafkadriver.ShareDriver{Broker: b, Source: newSource, Limit: 3})
//
// The broker keeps its default acquisition lock (30 s on kfake and
// Kafka) and delivery count limit (5).
type ShareDriver struct {
	// Broker holds the topics and the share groups.
	Broker *kafkatest.Broker

	// Source returns the share source under test, consuming topic as a
	// member of share group group on Broker, with a delivery limit of
	// Limit.
	Source func(t *testing.T, group, topic string) sluice.Source

	// Limit is the delivery limit Source gives its sources (for franz,
	// ShareConfig.MaxDeliveries), below the broker's; 0 for none.
	Limit int
}

var _ sourcetest.ShareDriver = ShareDriver{}

// CreateTopic creates topic on the broker.
func (d ShareDriver) CreateTopic(t *testing.T, topic string, partitions int32) {
	d.Broker.CreateTopic(t, topic, partitions)
}

// Produce appends recs to topic on the broker.
func (d ShareDriver) Produce(t *testing.T, topic string, recs ...sluice.Record) {
	d.Broker.Produce(t, topic, recs...)
}

// MaxDeliveries returns Limit.
func (d ShareDriver) MaxDeliveries() int { return d.Limit }

// NewShareSource sets group's share.auto.offset.reset to earliest (as an
// operator does before a share group's first start) and returns
// Source(t, group, topic).
func (d ShareDriver) NewShareSource(t *testing.T, group, topic string) sluice.Source {
	t.Helper()
	d.Broker.SetGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	return d.Source(t, group, topic)
}

// Unacknowledged returns the share-partition lag of each partition of
// topic that group has state for (DescribeShareGroupOffsets, KIP-1226).
// A failed describe counts as no state yet.
func (d ShareDriver) Unacknowledged(t *testing.T, group, topic string) map[int32]int64 {
	t.Helper()
	adm, err := d.Broker.Admin()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	got, err := adm.DescribeShareGroupOffsets(t.Context(), group)
	if err != nil {
		return out
	}
	for p, o := range got[group].Offsets[topic] {
		if o.Err == nil && o.StartOffset >= 0 && o.Lag >= 0 {
			out[p] = o.Lag
		}
	}
	return out
}

// AwaitUnacknowledged polls Unacknowledged until it equals want, for up
// to RecreateWait, and returns its last answer. A share coordinator
// writes acknowledgements to the share-group state asynchronously, and
// state for a recreated topic's partitions may not be described yet,
// so one answer read right after Run returned can lag the outcome the
// source already sent.
func (d ShareDriver) AwaitUnacknowledged(t *testing.T, group, topic string, want map[int32]int64) map[int32]int64 {
	t.Helper()
	deadline := time.Now().Add(RecreateWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		got := d.Unacknowledged(t, group, topic)
		if maps.Equal(got, want) || time.Now().After(deadline) {
			return got
		}
		<-tick.C
	}
}
