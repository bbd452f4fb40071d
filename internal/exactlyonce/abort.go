package exactlyonce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/sluice"
)

// This file is what follows an abort: the rewind in place, or stopping.
//
// An aborted transaction discards the outputs of every record delivered
// in it, so each partition with such records must process them again
// from the group's committed offset, which the transaction did not move.
// The Group does it without stopping Run, in this order:
//
//  1. the graphs of those partitions are cancelled (the runtime's Lose:
//     nothing they did commits, and once it returned nothing of them
//     runs, so nothing of them can be produced into the next
//     transaction); records held for them are dropped;
//  2. the transaction aborts (Txn.Abort);
//  3. the consumer seeks them back to their committed offsets
//     (Txn.Rewind), and no record fetched before the seek is delivered
//     (an abort inside Deliver defers this step and the next one to the
//     Group's next call that is not a Deliver: rewind_deferred.go);
//  4. they get new graphs (the runtime's Assign) and are listed as
//     resumable (one the source paused is resumed at its next resume
//     check: the runtime's Lose signalled Wake);
//  5. the next record delivered begins a new transaction.
//
// The partitions without records in the aborted transaction keep their
// graphs: everything they were handed finished before the last commit.

// abort aborts the open transaction because of cause, then rewinds in
// place the partitions kept that had records in it or held (when rewind
// is set: not at shutdown) or else stops the Group. A cause wrapping
// ErrFatal (the producer is fenced or failed fatally), a failed Abort or
// a failed Rewind stop it too.
func (g *Group) abort(cause error, rewind bool) {
	g.open = false
	g.draining = false
	rewind = rewind && !errors.Is(cause, ErrFatal)
	var tps []sluice.TopicPartition
	if rewind {
		tps = g.toRewind()
		if len(tps) > 0 {
			g.Group.Lose(tps)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.CommitTimeoutOrDefault())
	err := g.txn.Abort(ctx)
	cancel()
	switch {
	case err != nil:
		g.stop(cause, fmt.Errorf("sluice: aborting the transaction: %w", err))
	case !rewind:
		g.stop(cause, nil)
	case g.inDeliver:
		g.deferRewind(cause, tps) // rewind_deferred.go
	default:
		if err := g.rewind(tps); err != nil {
			g.stop(cause, err)
			return
		}
		g.log.Warn("exactly-once transaction aborted; partitions rewound to their committed offsets",
			"cause", cause, "rewound", tps)
	}
}

// abortShutdown aborts the open transaction at shutdown when that puts
// nothing at risk: the group refused its offsets (cause wraps
// ErrGroupMoved), or the drain left records unfinished (cause wraps
// errDrainUnfinished). Nothing of the transaction becomes visible and the
// partitions' next owner starts from the last committed transaction, as
// after a revoke whose commit aborted, so the Group does not stop (Run
// returns no error for it) unless the abort itself fails: then the
// transaction's outcome is unknown. It logs warning with cause.
func (g *Group) abortShutdown(cause error, warning string) {
	g.open = false
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.CommitTimeoutOrDefault())
	err := g.txn.Abort(ctx)
	cancel()
	if err != nil {
		g.stop(cause, fmt.Errorf("sluice: aborting the transaction: %w", err))
		return
	}
	g.log.Warn(warning, "cause", cause)
}

// toRewind returns the owned partitions (not being revoked) with records
// in the open transaction or held for the next one.
func (g *Group) toRewind() []sluice.TopicPartition {
	var out []sluice.TopicPartition
	for tp, p := range g.parts {
		if !p.leaving && (p.inTxn || len(p.held) > 0) {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, func(a, b sluice.TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// rewind seeks tps (their graphs cancelled, the transaction aborted) back
// to their committed offsets and builds their new graphs. The partitions
// whose topic is gone (Txn.Rewind) get none: they stay without a graph,
// their records dropped, until the source loses them.
func (g *Group) rewind(tps []sluice.TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	for _, tp := range tps {
		g.parts[tp] = newPartition() // what was held is dropped: it is fetched again
	}
	g.rewound(tps) // and so is what the layers above hold
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.CommitTimeoutOrDefault())
	defer cancel()
	gone, err := g.txn.Rewind(ctx, tps)
	if err != nil {
		return fmt.Errorf("sluice: rewinding %s to their committed offsets: %w", names(tps), err)
	}
	if len(gone) > 0 {
		tps = slices.DeleteFunc(slices.Clone(tps), func(tp sluice.TopicPartition) bool { return slices.Contains(gone, tp) })
		for _, tp := range gone {
			if p := g.parts[tp]; p != nil {
				p.rewinding = true // no graph, records dropped, until Lose
			}
		}
		g.log.Warn("exactly-once rewind: the topics of these partitions are gone (deleted, maybe recreated); they wait to be lost and consumed anew",
			"partitions", gone)
		if len(tps) == 0 {
			return nil
		}
	}
	if err := g.Group.Assign(tps); err != nil {
		return fmt.Errorf("sluice: new graphs for the rewound partitions %s: %w", names(tps), err)
	}
	g.resumable = append(g.resumable, tps...)
	return nil
}

// stop records the failure that ends the Group's transactions: cause
// (why the transaction aborted) joined with failed (why it could not be
// followed by a rewind), if any. The Group commits nothing after it.
func (g *Group) stop(cause, failed error) {
	g.err = fmt.Errorf("%w: %w", ErrAborted, cause)
	if failed != nil {
		g.err = errors.Join(g.err, failed)
	}
	g.log.Error("exactly-once transaction aborted; the consumer stops", "err", g.err)
}

// names lists tps as "topic/partition, ...".
func names(tps []sluice.TopicPartition) string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
	}
	return strings.Join(out, ", ")
}
