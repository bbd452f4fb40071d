package sourcetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// rebalanceMidStream: member A processes offsets [0, k) of every partition
// and then holds offset k until its partition's context ends. Member B
// joins: the partitions moved to B are revoked from A (the drain times
// out on the held record and commits exactly k) and B processes them from
// k to the end. A then stops: its last partitions are committed at k and
// move to B, which finishes them. Every offset is processed exactly once:
// below k by A, from k by B.
func rebalanceMidStream(t *testing.T, d Driver) {
	const parts, n, k = 4, 60, int64(25)
	topic, group := newTopic(t, d, parts, n)

	byA, byB := newSeen(), newSeen()
	holdA := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if r.Offset >= k {
				<-ctx.Done()
				return context.Cause(ctx)
			}
			byA.add(r.Partition, r.Offset)
			return nil
		})
	}
	plainB := checkAndCount(t, topic, byB)
	drain := pipeline.WithDrainTimeout(200 * time.Millisecond)
	ra, a := start(t, d, group, topic, holdA, drain)
	waitCommitted(t, d, ra, group, topic, uniform(parts, k))

	rb, b := start(t, d, group, topic, plainB, drain)
	var moved []sluice.TopicPartition
	rb.WaitUntil(t, "the partitions split between A and B", func() bool {
		if ra.Err() != nil {
			t.Fatalf("A's Run returned %v during the rebalance", ra.Err())
		}
		oa, ob := a.Owned(), b.Owned()
		all := append(slices.Clone(oa), ob...)
		slices.SortFunc(all, func(x, y sluice.TopicPartition) int { return int(x.Partition - y.Partition) })
		moved = ob
		return len(oa) > 0 && len(ob) > 0 && len(all) == parts && len(slices.Compact(all)) == parts
	})
	want := uniform(parts, k)
	for _, tp := range moved {
		want[tp.Partition] = n
	}
	waitCommitted(t, d, rb, group, topic, want)
	if err := ra.Stop(t); err != nil {
		t.Fatalf("A's Run = %v, want nil", err)
	}
	waitCommitted(t, d, rb, group, topic, uniform(parts, n))
	if err := rb.Stop(t); err != nil {
		t.Fatalf("B's Run = %v, want nil", err)
	}

	for p := range int32(parts) {
		byA.exactly(t, p, 0, k)
		byB.exactly(t, p, k, n)
	}
	checkCommitted(t, d, group, topic, uniform(parts, n))
	if ca := a.Counts(); ca.Revoked < len(moved) || ca.Lost != 0 {
		t.Errorf("A revoked %d partitions and lost %d; want at least the %d moved to B (%v) revoked, none lost",
			ca.Revoked, ca.Lost, len(moved), moved)
	}
	if cb := b.Counts(); cb.Assigned < parts || cb.Lost != 0 {
		t.Errorf("B was assigned %d partitions and lost %d; want all %d (%s) and none lost", cb.Assigned, cb.Lost, parts, fmt.Sprint(cb))
	}
}
