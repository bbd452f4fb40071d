package exactlyonce

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sluice-go/sluice"
)

// This file defers the rewind of a transaction that aborted inside
// Deliver.
//
// A source calls Deliver while it may hold records it fetched and has not
// delivered yet: rebalance.Core.Add flushes the batch of one partition
// (Deliver) before it appends the record it was given, which may be of a
// partition the abort rewinds (or the next record of the same partition,
// when the batch was full); franz's runner goes on with the records of the
// fetch at hand. Had Deliver sought the consumer back at once, that record,
// fetched before the seek, would reach the partition's new graph: processed
// in the next transaction, then again after the records from the committed
// offset (a duplicate), or committed by a revoke before those came back
// (the records in between lost).
//
// So an abort inside Deliver cancels the graphs and aborts the transaction
// at once, but leaves the partitions without a graph, dropping every
// record delivered for them, until the source's poll loop calls Polled
// (after each poll's records were handed over), Offsets or Resumable:
// only then are they sought back (Txn.Rewind) and given new graphs.
// Everything the source fetched before that call is dropped, and what it
// fetches after comes from the committed offset. Rebalance callbacks in
// between (Assign, Revoke, Lose) do not seek (they run inside the
// client's poll); partitions revoked or lost meanwhile are not sought at
// all (their next owner starts at the committed offset), and at Shutdown
// nothing is.

// deferRewind leaves tps (their graphs cancelled, the transaction
// aborted because of cause) without a graph until finishRewind.
func (g *Group) deferRewind(cause error, tps []sluice.TopicPartition) {
	for _, tp := range tps {
		p := newPartition() // what was held is dropped: it is fetched again
		p.rewinding = true
		g.parts[tp] = p
	}
	g.deferred = append(g.deferred, tps...)
	if g.deferredCause == nil {
		g.deferredCause = cause
	}
	g.log.Info("exactly-once transaction aborted inside a delivery; partitions rewound at the next poll",
		"cause", cause, "partitions", tps)
}

// finishRewind runs the deferred rewind, if any, of the partitions still
// owned (not revoked or lost since). A failed rewind stops the Group.
func (g *Group) finishRewind() {
	if len(g.deferred) == 0 {
		return
	}
	cause := g.deferredCause
	tps := slices.DeleteFunc(g.deferred, func(tp sluice.TopicPartition) bool {
		p := g.parts[tp]
		return p == nil || !p.rewinding
	})
	g.deferred, g.deferredCause = nil, nil
	if g.err != nil || len(tps) == 0 {
		return
	}
	slices.SortFunc(tps, comparePartitions)
	if err := g.rewind(tps); err != nil {
		g.stop(cause, err)
		return
	}
	g.log.Warn("exactly-once transaction aborted; partitions rewound to their committed offsets",
		"cause", cause, "rewound", tps)
}

// Polled implements sluice.Group: the source handed over what its poll
// returned, so a rewind deferred by an abort inside Deliver runs now.
func (g *Group) Polled() {
	g.finishRewind()
	g.Group.Polled()
}

// comparePartitions orders partitions by topic, then number.
func comparePartitions(a, b sluice.TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
