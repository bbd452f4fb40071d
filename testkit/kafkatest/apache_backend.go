//go:build linux

package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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

func (a *apacheBackend) committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	out := make(map[int32]int64)
	// The group's offsets of every topic, then topic's: FetchOffsetsForTopics
	// would look the topic up first, and fail (after retrying) when it does
	// not exist, where kfake answers no commits.
	rs, err := a.c.adm.FetchOffsets(ctx, group)
	// The group's coordinator may not be ready yet (the offsets topic is
	// created by the first group request, and loads after a restart):
	// its retriable errors are asked again until ctx ends.
	for err != nil && kerr.IsRetriable(err) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (still at %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
		rs, err = a.c.adm.FetchOffsets(ctx, group)
	}
	if err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return out, nil
		}
		return nil, err
	}
	for p, r := range rs[topic] {
		if r.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, r.Err)
		}
		if r.At >= 0 {
			out[p] = r.At
		}
	}
	return out, nil
}
