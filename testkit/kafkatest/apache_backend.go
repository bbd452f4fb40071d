//go:build linux

package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apacheBackend is a Broker's view of an Apache Kafka cluster: a shared one
// borrowed from the pool (release gives it back, reset), or one of its own
// (release closes it).
type apacheBackend struct {
	c       *apacheCluster
	release func()
}

func (a *apacheBackend) kind() Kind               { return Apache }
func (a *apacheBackend) addrs() []string          { return a.c.addrs() }
func (a *apacheBackend) logTail(lines int) string { return a.c.logTail(lines) }
func (a *apacheBackend) close()                   { a.release() }

func (a *apacheBackend) createTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = &v
	}
	r, err := a.c.adm.CreateTopic(ctx, partitions, -1, cfg, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return err
	}
	// CreateTopics answers once the controller committed the topic; wait
	// until every partition has a leader, so the first produce or fetch
	// does not race the brokers' metadata.
	return a.c.waitLeaders(ctx, topic, partitions)
}

func (a *apacheBackend) offsets(ctx context.Context, topic string) (start, end map[int32]int64, err error) {
	// A partition's leadership may still be moving to the broker the
	// client's metadata names (NOT_LEADER_FOR_PARTITION right after the
	// topic was created).
	err = askedUntilSettled(ctx, func() (err error) {
		start, end, err = a.listOffsets(ctx, topic)
		return err
	})
	return start, end, err
}

// askedUntilSettled calls ask until it returns nil or an error that is
// not retriable, 50 ms apart, or until ctx ends.
func askedUntilSettled(ctx context.Context, ask func() error) error {
	for {
		err := ask()
		if err == nil || !kerr.IsRetriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still at %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listOffsets asks once for the log start and end offsets of topic.
func (a *apacheBackend) listOffsets(ctx context.Context, topic string) (start, end map[int32]int64, err error) {
	so, err := a.c.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	eo, err := a.c.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	if e := eo.Error(); e != nil {
		if errors.Is(e, kerr.UnknownTopicOrPartition) {
			return nil, nil, errUnknownTopic
		}
		return nil, nil, e
	}
	if e := so.Error(); e != nil {
		return nil, nil, e
	}
	if len(eo[topic]) == 0 {
		return nil, nil, errUnknownTopic
	}
	start, end = make(map[int32]int64), make(map[int32]int64)
	for p, o := range so[topic] {
		start[p] = o.Offset
	}
	for p, o := range eo[topic] {
		end[p] = o.Offset
	}
	return start, end, nil
}

func (a *apacheBackend) committed(ctx context.Context, group, topic string) (out map[int32]int64, err error) {
	// The group's coordinator may not be ready yet (the offsets topic is
	// created by the first group request, and loads after a restart), or
	// a transaction holds offsets of the group.
	err = askedUntilSettled(ctx, func() (err error) {
		out, err = a.fetchCommitted(ctx, group, topic)
		return err
	})
	return out, err
}

// fetchCommitted asks group's coordinator once for its offsets of topic.
//
// Offsets a transaction sent are written to the group after EndTxn has
// answered. Until then an offset fetch that requires stable offsets and
// names their partitions is refused (UNSTABLE_OFFSET_COMMIT, retriable);
// one that asks for all the group's offsets leaves out a partition with
// no earlier commit. So the partitions of topic are named when it exists.
// When it does not, the group's offsets of every topic are asked for and
// topic's kept: the broker answers those of a deleted topic until it has
// removed them, as kfake does.
func (a *apacheBackend) fetchCommitted(ctx context.Context, group, topic string) (map[int32]int64, error) {
	listed, err := a.c.adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, true
	if t := listed[topic]; t.Err == nil {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		for p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, a.c.cl)
	if err != nil {
		return nil, err
	}
	// The client answers a one-group request in its top-level fields.
	out := make(map[int32]int64)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return out, nil
		}
		return nil, err
	}
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("partition %d: %w", rp.Partition, err)
			}
			if rp.Offset >= 0 {
				out[rp.Partition] = rp.Offset
			}
		}
	}
	return out, nil
}
