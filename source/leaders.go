package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// LeadersConfig configures [NewLeaders]. Brokers and Groups are required.
type LeadersConfig struct {
	// Brokers is the bootstrap list, host:port each (bootstrap.servers).
	Brokers []string

	// Groups are the leader consumer groups: a follower delivers a record
	// once every one of them has committed past it. Each must be named
	// once, and none may be the follower's own group.
	Groups []string

	// Overrides are librdkafka properties for the admin client: TLS, SASL,
	// socket timeouts, log_level (its logs go to librdkafka's own logger,
	// stderr). Values are converted as for Config.Overrides;
	// bootstrap.servers and the go.* properties cannot be set.
	Overrides map[string]any
}

// Leaders is a [follow.Leaders] reading the committed offsets of
// LeadersConfig.Groups with a librdkafka admin client
// (ListConsumerGroupOffsets): each Committed call sends one request per
// group (librdkafka takes one group per call), for every partition
// asked. Create it with [NewLeaders] and Close it once the follower's Run
// returned. Committed is safe for concurrent use.
type Leaders struct {
	admin  *kafka.AdminClient
	groups []string
}

var _ follow.Leaders = (*Leaders)(nil)

// NewLeaders validates cfg and creates the admin client. Errors name the
// offending field: an empty Brokers or Groups, an empty or repeated group
// name, a refused or invalid override, or what librdkafka rejects.
func NewLeaders(cfg LeadersConfig) (*Leaders, error) {
	if err := rebalance.CheckLeadersConfig("source", cfg.Brokers, cfg.Groups); err != nil {
		return nil, err
	}
	cm := kafka.ConfigMap{}
	for k, v := range cfg.Overrides {
		if k == "bootstrap.servers" || k == "metadata.broker.list" || strings.HasPrefix(k, "go.") {
			return nil, fmt.Errorf("source: LeadersConfig.Overrides[%q] cannot be set (use LeadersConfig.Brokers; go.* properties are not supported)", k)
		}
		nv, err := librdkafka.NormalizeOverride("source: LeadersConfig.Overrides", k, v)
		if err != nil {
			return nil, err
		}
		cm[k] = nv
	}
	cm["bootstrap.servers"] = strings.Join(cfg.Brokers, ",")
	admin, err := kafka.NewAdminClient(&cm)
	if err != nil {
		return nil, fmt.Errorf("source: LeadersConfig: create admin client: %w", err)
	}
	return &Leaders{admin: admin, groups: append([]string(nil), cfg.Groups...)}, nil
}

// Committed implements [follow.Leaders]: for each of tps, the lowest
// offset committed by the groups; a partition some group has not
// committed is absent. An error names the group (and partition) whose
// offsets could not be read.
func (l *Leaders) Committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	per := make(map[string]map[sluice.TopicPartition]int64, len(l.groups))
	for _, g := range l.groups {
		res, err := l.admin.ListConsumerGroupOffsets(ctx,
			[]kafka.ConsumerGroupTopicPartitions{{Group: g, Partitions: kafkaTPs(tps)}})
		got := map[sluice.TopicPartition]int64{}
		if err != nil {
			if !groupNotFound(err) {
				return nil, fmt.Errorf("source: committed offsets of group %q: %w", g, err)
			}
			// Kafka's new group coordinator (and kfake) answer this for
			// a group that never committed (nor joined): nothing committed.
			for _, tp := range tps {
				got[tp] = int64(kafka.OffsetInvalid)
			}
		}
		for _, r := range res.ConsumerGroupsTopicPartitions {
			for _, p := range r.Partitions {
				tp := sluice.TopicPartition{Topic: topicOf(p), Partition: p.Partition}
				if p.Error != nil {
					return nil, fmt.Errorf("source: committed offset of group %q on %s/%d: %w", g, tp.Topic, tp.Partition, p.Error)
				}
				got[tp] = int64(p.Offset) // kafka.OffsetInvalid (-1001) when nothing is committed
			}
		}
		for _, tp := range tps {
			if _, ok := got[tp]; !ok {
				return nil, fmt.Errorf("source: committed offsets of group %q: no answer for %s/%d", g, tp.Topic, tp.Partition)
			}
		}
		per[g] = got
	}
	return rebalance.LowestCommitted(l.groups, tps, per), nil
}

func groupNotFound(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && kerr.Code() == kafka.ErrGroupIDNotFound
}

// Close closes the admin client. Call it once the follower's Run returned
// (no Committed call runs then).
func (l *Leaders) Close() { l.admin.Close() }
