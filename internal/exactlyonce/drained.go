package exactlyonce

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-go/sluice"
)

// This file tells, after the runtime's Revoke or Shutdown drained
// partitions, whether the transaction may commit their final offsets.
//
// A drain feeds no more records to a graph and waits for those it fed;
// the records still queued are dropped and produced nothing. A fed record
// may still end unfinished: a stage error during the drain (the runtime
// only logs it, the partition being taken away), a retry the drain cut
// short, a value a stopping stage let go, the drain timeout. The
// partition's final offset then stays at that record, while the record
// may have produced part of its outputs and the records after it (in
// other branches of the graph, or past a stage that does not keep them
// back) all of theirs. Those outputs are in the open transaction, which
// spans every partition: committing it would commit them with offsets
// behind them, and the next owner would produce them again. So the
// transaction aborts instead (Revoke, Shutdown): nothing of it becomes
// visible and no offset moves, and every partition with records in it
// is processed again from its committed offset, by its next owner or,
// for the partitions a revoke keeps, after a rewind in place (abort.go).

// errDrainUnfinished is the cause of an abort after a drain that left
// records unfinished.
var errDrainUnfinished = errors.New("records fed to a drained partition's graph did not finish (a stage error, a retry cut short, the drain timeout); their outputs and those of the records after them must not commit with the offsets behind them")

// drainedUnfinished names the partitions of tps, just drained, with
// records in the open transaction that the drain left unfinished (the
// wrapped Group's Unfinished).
func (g *Group) drainedUnfinished(tps []sluice.TopicPartition) []string {
	flagged := g.Group.Unfinished()
	var out []string
	for _, tp := range tps {
		p := g.parts[tp]
		if p == nil || !p.inTxn || p.done == p.delivered {
			continue
		}
		if !slices.Contains(flagged, tp) {
			continue
		}
		out = append(out, fmt.Sprintf("%s/%d at %d of %d", tp.Topic, tp.Partition, p.done, p.delivered))
	}
	slices.Sort(out)
	return out
}
