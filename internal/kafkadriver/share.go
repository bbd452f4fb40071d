package kafkadriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := shareFromEarliest(ctx, d.Broker.Addrs(), group); err != nil {
		t.Fatal(err)
	}
	return d.Source(t, group, topic)
}

// shareFromEarliest sets the group config share.auto.offset.reset of
// group to earliest.
func shareFromEarliest(ctx context.Context, brokers []string, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafkadriver: setting share.auto.offset.reset of %s: %w", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("kafkadriver: setting share.auto.offset.reset of %s: %w", group, err)
		}
	}
	return nil
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
