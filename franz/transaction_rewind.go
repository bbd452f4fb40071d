package franz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rewind implements exactlyonce.Txn: it reads the group's committed
// offsets of tps (OffsetFetch with RequireStable, waiting out offsets of
// a transaction still completing), resolves a partition without one as
// kgo.ConsumeResetOffset would (the start, by the source's default), and
// moves kgo's positions there (SetOffsets). SetOffsets restarts kgo's
// fetch session, which discards every fetch buffered or in flight; the
// records of tps still in the fetches the poll loop is handling are
// dropped by the runner (rewound), and so are those the runner's core
// held for them, so the next record of each partition the Group gets is
// the first one at or after the offset sought.
//
// A partition the broker answers UNKNOWN_TOPIC_ID or
// UNKNOWN_TOPIC_OR_PARTITION for (its topic was deleted, maybe
// recreated, while kgo still holds the old topic ID), or whose topic is
// already marked gone in this poll (by a fetch error, or by the commit
// that aborted: checkTopicIDs), is returned gone and not sought: its records at hand are dropped as the others', and its
// topic is marked gone, so the poll loop loses its partitions and
// consumes the topic anew (runner.topicsGone).
func (t *kgoTxn) Rewind(ctx context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	gone, err := t.rewind(ctx, tps)
	return gone, fatalTxn(err)
}

func (t *kgoTxn) rewind(ctx context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	if len(tps) == 0 {
		return nil, nil
	}
	// Partitions of topics marked gone in this poll (a fetch's
	// UNKNOWN_TOPIC_ID, or the commit that aborted found the topic
	// replaced) are gone without asking: by name, the broker would answer
	// for a topic recreated under it.
	var gone, ask []sluice.TopicPartition
	for _, tp := range tps {
		if t.gone != nil && (*t.gone)[tp.Topic] {
			gone = append(gone, tp)
		} else {
			ask = append(ask, tp)
		}
	}
	committed := make(map[sluice.TopicPartition]int64)
	if len(ask) > 0 {
		var more []sluice.TopicPartition
		var err error
		committed, more, err = t.committed(ctx, ask)
		if err != nil {
			return nil, err
		}
		gone = append(gone, more...)
	}
	var missing []sluice.TopicPartition
	for _, tp := range ask {
		if _, ok := committed[tp]; !ok && !slices.Contains(gone, tp) {
			missing = append(missing, tp)
		}
	}
	if len(missing) > 0 {
		reset, resetGone, err := t.resetOffsets(ctx, missing)
		if err != nil {
			return nil, err
		}
		for tp, o := range reset {
			committed[tp] = o
		}
		gone = append(gone, resetGone...)
	}
	set := make(map[string]map[int32]kgo.EpochOffset)
	for _, tp := range tps {
		t.rewound[tp] = true
		if slices.Contains(gone, tp) {
			t.gone.add(tp.Topic)
			continue
		}
		if set[tp.Topic] == nil {
			set[tp.Topic] = make(map[int32]kgo.EpochOffset)
		}
		set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: committed[tp]}
	}
	if len(set) > 0 {
		t.cl.SetOffsets(set)
	}
	t.core.DropHeld(tps)
	return gone, nil
}

// committed returns the group's committed offsets of tps (a partition
// without one is absent) and the partitions whose topic the broker does
// not know (topicGoneCode), retrying UNSTABLE_OFFSET_COMMIT until ctx
// ends.
func (t *kgoTxn) committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, []sluice.TopicPartition, error) {
	req := offsetFetchRequest([]string{t.group}, tps)
	req.RequireStable = true
	for {
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return nil, nil, fmt.Errorf("rewinding: reading the committed offsets of %v: %w", tps, err)
		}
		gone := takeGone(resp)
		out, err := leadersMin([]string{t.group}, tps, resp)
		if !errors.Is(err, kerr.UnstableOffsetCommit) {
			if err != nil {
				return nil, nil, fmt.Errorf("rewinding: %w", err)
			}
			return out, gone, nil
		}
		w := time.NewTimer(20 * time.Millisecond)
		select {
		case <-w.C:
		case <-ctx.Done():
			w.Stop()
			return nil, nil, fmt.Errorf("rewinding: the committed offsets of %v stayed unstable: %w", tps, err)
		}
	}
}

// takeGone removes from resp the partitions whose topic the broker does
// not know (topicGoneCode) and returns them.
func takeGone(resp *kmsg.OffsetFetchResponse) []sluice.TopicPartition {
	var gone []sluice.TopicPartition
	for i := range resp.Groups {
		for j := range resp.Groups[i].Topics {
			rt := &resp.Groups[i].Topics[j]
			rt.Partitions = slices.DeleteFunc(rt.Partitions, func(rp kmsg.OffsetFetchResponseGroupTopicPartition) bool {
				if topicGoneCode(rp.ErrorCode) {
					gone = append(gone, sluice.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
					return true
				}
				return false
			})
		}
	}
	return gone
}

// resetOffsets returns where kgo.ConsumeResetOffset starts tps: the
// partitions' start or end (ListOffsets, read_committed), or its exact
// offset. Other reset offsets (relative, by time) cannot be rewound to.
// A partition whose topic the broker does not know (topicGoneCode) is
// returned gone.
func (t *kgoTxn) resetOffsets(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, []sluice.TopicPartition, error) {
	reset, _ := t.cl.OptValue(kgo.ConsumeResetOffset).(kgo.Offset)
	eo := reset.EpochOffset()
	out := make(map[sluice.TopicPartition]int64, len(tps))
	switch {
	case eo.Offset >= 0:
		for _, tp := range tps {
			out[tp] = eo.Offset
		}
		return out, nil, nil
	case eo.Offset != -2 && eo.Offset != -1:
		return nil, nil, fmt.Errorf("rewinding %v, which have no committed offset: kgo.ConsumeResetOffset %v is neither the start, the end nor an exact offset", tps, reset)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 1 // read_committed: the end is the last stable offset
	topics, by := byTopic(tps, tpTopic)
	for _, topic := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, tp := range by[topic] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = tp.Partition, eo.Offset // -2 earliest, -1 latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	var errs []error
	var gone []sluice.TopicPartition
	// Sharded: kgo fails the part of the request for partitions its
	// metadata does not know (a topic deleted, or recreated with fewer
	// partitions) with UNKNOWN_TOPIC_OR_PARTITION, and answers the rest.
	for _, shard := range t.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			sreq, _ := shard.Req.(*kmsg.ListOffsetsRequest)
			if sreq == nil || !topicGoneErr(shard.Err) {
				errs = append(errs, fmt.Errorf("rewinding: listing the reset offsets of %v: %w", tps, shard.Err))
				continue
			}
			for _, rt := range sreq.Topics {
				for _, rp := range rt.Partitions {
					gone = append(gone, sluice.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				}
			}
			continue
		}
		resp, _ := shard.Resp.(*kmsg.ListOffsetsResponse)
		if resp == nil {
			continue
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if topicGoneCode(rp.ErrorCode) {
					gone = append(gone, sluice.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
					continue
				}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("rewinding: the reset offset of %s/%d: %w", rt.Topic, rp.Partition, err))
					continue
				}
				out[sluice.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.Offset
			}
		}
	}
	for _, tp := range tps {
		if _, ok := out[tp]; !ok && len(errs) == 0 && !slices.Contains(gone, tp) {
			errs = append(errs, fmt.Errorf("rewinding: ListOffsets did not answer for %s/%d", tp.Topic, tp.Partition))
		}
	}
	return out, gone, errors.Join(errs...)
}

// dropRewound reports whether the records of tp in the fetches at hand
// must be dropped: tp was rewound since they were polled.
func (t *transactions) dropRewound(tp sluice.TopicPartition) bool {
	return t != nil && t.txn.rewound[tp]
}

// polled forgets the rewound partitions before a poll: what kgo returns
// from then on was fetched after the seeks.
func (t *transactions) polled() {
	if t != nil {
		clear(t.txn.rewound)
	}
}
