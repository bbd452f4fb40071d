//go:build linux

package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitLeaders polls metadata until every partition of topic has a leader.
func (c *apacheCluster) waitLeaders(ctx context.Context, topic string, partitions int32) error {
	var last error
	for {
		last = c.leadersKnown(ctx, topic, partitions)
		if last == nil {
			return nil
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("topic %q: partitions without a leader: %w (last: %v)", topic, err, last)
		}
	}
}

func (c *apacheCluster) leadersKnown(ctx context.Context, topic string, partitions int32) error {
	// Every node is asked: each broker learns of a new topic from the
	// metadata log on its own time, and a client asking one that has not
	// yet would be told the topic does not exist.
	for _, n := range c.nodes {
		if err := c.nodeKnowsLeaders(ctx, n, topic, partitions); err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
	}
	return nil
}

func (c *apacheCluster) nodeKnowsLeaders(ctx context.Context, n *apacheNode, topic string, partitions int32) error {
	done := n.exited()
	if done == nil {
		return nil // a stopped node learns everything when it starts again
	}
	select {
	case <-done:
		return nil
	default:
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	// Its own request to this node: kadm's Metadata may answer from a cache.
	m, err := req.RequestWith(ctx, c.cl.Broker(n.id))
	if err != nil {
		return err
	}
	if len(m.Topics) != 1 {
		return fmt.Errorf("metadata: %d topics in the answer", len(m.Topics))
	}
	td := m.Topics[0]
	if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if int32(len(td.Partitions)) != partitions {
		return fmt.Errorf("%d of %d partitions", len(td.Partitions), partitions)
	}
	for _, p := range td.Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
			return fmt.Errorf("partition %d: leader %d: %v", p.Partition, p.Leader, err)
		}
	}
	return nil
}

// reset makes a used cluster look new to the next test: it deletes every
// group, group config and topic the test created. It fails, and the pool then
// closes the cluster instead of reusing it, when a group keeps members
// (a client of the test still open), a transaction is still open, or a
// deletion does not complete within the context.
func (c *apacheCluster) reset(ctx context.Context) error {
	if err := c.deleteGroups(ctx); err != nil {
		return err
	}
	if err := c.deleteGroupConfigs(ctx); err != nil {
		return err
	}
	if err := c.waitTransactions(ctx); err != nil {
		return err
	}
	return c.deleteTopics(ctx)
}

// waitTransactions fails if a transaction is open, after waiting for those
// that ended to have their markers written: EndTxn answers once the
// transaction is PrepareCommit or PrepareAbort, and the coordinator writes
// the markers after (PrepareEpochFence, too, ends in an abort).
func (c *apacheCluster) waitTransactions(ctx context.Context) error {
	for {
		txns, err := c.adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
		if err != nil {
			return fmt.Errorf("list transactions: %w", err)
		}
		if len(txns) == 0 {
			return nil
		}
		var open []string
		txns.Each(func(t kadm.ListedTransaction) {
			if t.State == "Ongoing" {
				open = append(open, t.TxnID)
			}
		})
		if len(open) > 0 {
			return fmt.Errorf("transactions still open: %v", open)
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("transactions still writing their markers: %d", len(txns))
		}
	}
}

func (c *apacheCluster) deleteGroups(ctx context.Context) error {
	for {
		ls, err := c.adm.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("list groups: %w", err)
		}
		names := ls.Groups()
		names = slices.DeleteFunc(names, func(g string) bool { return g == "sluice-ready" })
		if len(names) == 0 {
			return nil
		}
		rs, err := c.adm.DeleteGroups(ctx, names...)
		if err != nil {
			return fmt.Errorf("delete groups: %w", err)
		}
		var busy []string
		for g, r := range rs {
			if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
				busy = append(busy, fmt.Sprintf("%s: %v", g, r.Err))
			}
		}
		if len(busy) == 0 {
			continue // list again: nothing may be left
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("groups not deleted: %v", busy)
		}
	}
}

func (c *apacheCluster) deleteTopics(ctx context.Context) error {
	for {
		names, err := c.topicNames(ctx)
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if len(names) == 0 {
			return nil
		}
		if _, err := c.adm.DeleteTopics(ctx, names...); err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("topics not deleted: %v", names)
		}
	}
}

// topicNames lists the topics that are not internal with a metadata
// request of its own: kadm's ListTopics answers from the client's metadata
// cache, which shows deleted topics for seconds.
func (c *apacheCluster) topicNames(ctx context.Context) ([]string, error) {
	m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.cl) // no Topics: all of them
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range m.Topics {
		if !t.IsInternal && t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	return names, nil
}

// pause waits d or until ctx ends (then its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
