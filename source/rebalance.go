package source

import (
	"fmt"
	"slices"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

// rebalance is the librdkafka rebalance callback. It runs inside Poll, on
// the poll goroutine, so it may call the Group.
//
// With the eager protocol (range, roundrobin) every rebalance revokes the
// whole assignment and assigns a new one (Assign/Unassign); with the
// cooperative protocol (cooperative-sticky, and KIP-848's
// group.protocol=consumer) only the moved partitions are revoked or added
// (IncrementalAssign/IncrementalUnassign).
func (r *runner) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	cooperative := c.GetRebalanceProtocol() == "COOPERATIVE"
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		r.assigned(e.Partitions, cooperative)
	case kafka.RevokedPartitions:
		r.revoked(e.Partitions, cooperative, c.AssignmentLost())
	}
	return nil
}

func (r *runner) assigned(parts []kafka.TopicPartition, cooperative bool) {
	tps := pipelineTPs(parts)
	r.log.Info("partitions assigned", "partitions", tps, "cooperative", cooperative)
	if !r.joined {
		r.joined = true
		r.g.Joined()
	}
	if !r.closing && r.fatal == nil && len(tps) > 0 {
		if err := r.g.Assign(tps); err != nil {
			// A graph failed to build: Run has recorded the error and
			// cancels ctx, so we carry on and shut down gracefully.
			// Partitions without a graph drop their records and report
			// no offsets.
			r.log.Error("assign failed; waiting for the runtime to stop", "partitions", tps, "err", err)
		}
		for _, tp := range tps {
			r.owned[tp] = true
			delete(r.paused, tp)
		}
	}
	var err error
	if cooperative {
		err = r.c.IncrementalAssign(parts)
	} else {
		err = r.c.Assign(parts)
	}
	if err != nil {
		r.fatal = fmt.Errorf("source: assign partitions %v: %w", tps, err)
		return
	}
	// librdkafka keeps a partition paused across revoke and re-assign:
	// whatever we paused in an earlier assignment must not stay paused.
	// Only those are resumed (resuming a partition that is not paused is
	// not a no-op in every librdkafka version).
	var stale []pipeline.TopicPartition
	for _, tp := range tps {
		if r.leftPaused[tp] {
			stale = append(stale, tp)
			delete(r.leftPaused, tp)
		}
	}
	if len(stale) > 0 {
		if err := r.c.Resume(kafkaTPs(stale)); err != nil {
			r.log.Warn("resume of re-assigned partitions failed", "partitions", stale, "err", err)
		}
	}
}

func (r *runner) revoked(parts []kafka.TopicPartition, cooperative, lost bool) {
	tps := pipelineTPs(parts)
	if r.closing {
		// Close (or the loop's end) already handed everything back.
		r.unassign(parts, cooperative)
		return
	}
	// Records polled before the revoke still belong to an owned partition:
	// hand them over first so the graph sees them before draining.
	r.flush()
	var mine []pipeline.TopicPartition
	for _, tp := range tps {
		if r.owned[tp] {
			mine = append(mine, tp)
		}
		delete(r.owned, tp)
		if r.paused[tp] || slices.Contains(r.unresumed, tp) {
			r.leftPaused[tp] = true // still paused in librdkafka
			delete(r.paused, tp)
		}
	}
	switch {
	case len(mine) == 0:
	case lost:
		r.log.Warn("partitions lost", "partitions", mine)
		r.g.Lose(mine)
	default:
		r.log.Info("partitions revoked", "partitions", mine, "cooperative", cooperative)
		offs := r.g.Revoke(mine)
		// The fence above already dropped these from owned; commit
		// what the graphs finished while we still are the owner in
		// the group's eyes (before unassigning).
		r.commitSync(filterTPs(offs, mine), "revoke")
	}
	r.unassign(parts, cooperative)
}

func (r *runner) unassign(parts []kafka.TopicPartition, cooperative bool) {
	var err error
	if cooperative {
		err = r.c.IncrementalUnassign(parts)
	} else {
		err = r.c.Unassign()
	}
	if err != nil && !r.closing {
		r.log.Warn("unassign failed", "partitions", pipelineTPs(parts), "err", err)
	}
}

// filterTPs keeps the offsets of the given partitions.
func filterTPs(offs []pipeline.Offset, tps []pipeline.TopicPartition) []pipeline.Offset {
	keep := make(map[pipeline.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		keep[tp] = true
	}
	out := offs[:0:0]
	for _, o := range offs {
		if keep[o.TopicPartition] {
			out = append(out, o)
		}
	}
	return out
}
