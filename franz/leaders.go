package franz

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// LeadersConfig configures [NewLeaders]. Brokers and Groups are required.
// NewLeaders copies it.
type LeadersConfig struct {
	// Brokers is the bootstrap list, host:port each (kgo.SeedBrokers).
	Brokers []string

	// Groups are the leader consumer groups: a follower delivers a record
	// once every one of them has committed past it. Each must be named
	// once, and none may be the follower's own group.
	Groups []string

	// Opts are passed to kgo.NewClient: TLS (kgo.DialTLSConfig), SASL
	// (kgo.SASL), request timeouts, kgo.WithLogger and so on. The client
	// only reads committed offsets: options that make it consume
	// (kgo.ConsumerGroup, kgo.ConsumeTopics, kgo.ConsumeRegex,
	// kgo.ConsumePartitions) and kgo.SeedBrokers are refused by
	// NewLeaders with an error naming them.
	Opts []kgo.Opt
}

// leadersReserved are the kgo options LeadersConfig.Opts must leave alone.
var leadersReserved = []reservedOpt{
	{kgo.SeedBrokers, "use LeadersConfig.Brokers"},
	{kgo.ConsumerGroup, "the leaders client reads committed offsets; it joins no group"},
	{kgo.ConsumeTopics, "the leaders client reads committed offsets; it consumes nothing"},
	{kgo.ConsumeRegex, "the leaders client reads committed offsets; it consumes nothing"},
	{kgo.ConsumePartitions, "the leaders client reads committed offsets; it consumes nothing"},
}

// Leaders is a [follow.Leaders] reading the committed offsets of
// LeadersConfig.Groups from their group coordinators with a kgo client:
// each Committed call is one OffsetFetch request for every group and
// partition asked (kgo splits it by coordinator, and by group for brokers
// older than Kafka 3.0). Create it with [NewLeaders] and Close it once the
// follower's Run returned. Committed is safe for concurrent use.
type Leaders struct {
	cl     *kgo.Client
	groups []string
}

var _ follow.Leaders = (*Leaders)(nil)

// NewLeaders validates cfg and creates the client (it connects on the
// first Committed call). Errors name the offending field: an empty
// Brokers or Groups, an empty or repeated group name, a refused kgo
// option, or what kgo rejects.
func NewLeaders(cfg LeadersConfig) (*Leaders, error) {
	if err := rebalance.CheckLeadersConfig("franz", cfg.Brokers, cfg.Groups); err != nil {
		return nil, err
	}
	for i, o := range cfg.Opts {
		if o == nil {
			return nil, fmt.Errorf("franz: LeadersConfig.Opts[%d] is nil", i)
		}
	}
	if err := checkReserved("LeadersConfig.Opts", nil, cfg.Opts, leadersReserved); err != nil {
		return nil, err
	}
	opts := append(slices.Clone(cfg.Opts), kgo.SeedBrokers(cfg.Brokers...))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("franz: LeadersConfig: create client: %w", err)
	}
	return &Leaders{cl: cl, groups: slices.Clone(cfg.Groups)}, nil
}

// Committed implements [follow.Leaders]: for each of tps, the lowest
// offset committed by the groups; a partition some group has not
// committed is absent. An error names the group (and partition) whose
// offsets could not be read, or the request that failed.
func (l *Leaders) Committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	resp, err := offsetFetchRequest(l.groups, tps).RequestWith(ctx, l.cl)
	if err != nil {
		return nil, fmt.Errorf("franz: reading the committed offsets of %v: %w", l.groups, err)
	}
	return leadersMin(l.groups, tps, resp)
}

// leadersMin folds an OffsetFetch response into the lowest offset per
// partition over groups.
func leadersMin(groups []string, tps []sluice.TopicPartition, resp *kmsg.OffsetFetchResponse) (map[sluice.TopicPartition]int64, error) {
	per := make(map[string]map[sluice.TopicPartition]int64, len(groups))
	var errs []error
	for _, rg := range resp.Groups {
		if rg.ErrorCode == kerr.GroupIDNotFound.Code {
			// Kafka's new group coordinator (and kfake) answer this for a
			// group that never committed (nor joined): nothing committed.
			per[rg.Group] = map[sluice.TopicPartition]int64{}
			continue
		}
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("franz: committed offsets of group %q: %w", rg.Group, err))
			continue
		}
		m := map[sluice.TopicPartition]int64{}
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				tp := sluice.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("franz: committed offset of group %q on %s/%d: %w", rg.Group, tp.Topic, tp.Partition, err))
					continue
				}
				m[tp] = rp.Offset
			}
		}
		per[rg.Group] = m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, g := range groups {
		if per[g] == nil {
			return nil, fmt.Errorf("franz: the OffsetFetch response has no answer for group %q", g)
		}
	}
	return rebalance.LowestCommitted(groups, tps, per), nil
}

// Close closes the client. Call it once the follower's Run returned (no
// Committed call runs then).
func (l *Leaders) Close() { l.cl.Close() }
