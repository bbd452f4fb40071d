package franz

import (
	"context"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Where partitions start when Config.OffsetStore is set: the poll loop
// claims a new assignment from the store before the graphs are built
// (serve, rebalance.Core.Claim) and records the offsets here; kgo then
// fetches the group's committed offsets for the new partitions and,
// before it fetches any record of them, passes them through
// adjustOffsets (kgo.AdjustFetchOffsetsFn, called after
// OnPartitionsAssigned returned), which replaces those the store named.

// startAt records the claimed start offsets of tps, the partitions of
// an assignment, for adjustOffsets; those start leaves out lose what an
// earlier claim recorded. Called on the poll goroutine.
func (r *runner) startAt(tps []sluice.TopicPartition, start map[sluice.TopicPartition]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		delete(r.starts, tp)
	}
	if len(start) == 0 {
		return
	}
	if r.starts == nil {
		r.starts = make(map[sluice.TopicPartition]int64)
	}
	for tp, off := range start {
		r.starts[tp] = off
	}
}

// adjustOffsets is kgo's AdjustFetchOffsetsFn: each partition with a
// recorded start offset starts there (epoch -1: the store's offset is
// not checked against a leader epoch). A recorded offset is used once.
func (r *runner) adjustOffsets(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for topic, parts := range offs {
		for p := range parts {
			tp := sluice.TopicPartition{Topic: topic, Partition: p}
			if off, ok := r.starts[tp]; ok {
				parts[p] = kgo.NewOffset().At(off).WithEpoch(-1)
				delete(r.starts, tp)
			}
		}
	}
	return offs, nil
}
