package source

import (
	"fmt"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

// rebalance is the librdkafka rebalance callback. It runs inside Poll, on
// the poll goroutine, so it may call the Group; or inside Close (see
// shutdown.go), possibly on the close goroutine after Run returned, where
// it only answers librdkafka.
//
// With the eager protocol (range, roundrobin) every rebalance revokes the
// whole assignment and assigns a new one (Assign/Unassign); with the
// cooperative protocol (cooperative-sticky, and KIP-848's
// group.protocol=consumer) only the moved partitions are revoked or added
// (IncrementalAssign/IncrementalUnassign).
func (r *runner) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	if r.inClose {
		r.k.closeCallbacks.Add(1)
		r.answerInClose(ev)
		return nil
	}
	r.callbacks++
	// A topic seen recreated is served first: a revoke must not commit
	// the old topic's offsets onto the new one (KIP-848 moves a recreated
	// topic's partitions by topic ID: a revoke of the old ID, then an
	// assignment of the new one, which starts from the group's commit).
	r.topicsRecreated()
	cooperative := r.cooperative()
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		r.assigned(e.Partitions, cooperative)
	case kafka.RevokedPartitions:
		r.revoked(e.Partitions, cooperative, c.AssignmentLost())
	}
	return nil
}

// cooperative reports whether the rebalance protocol is cooperative. It
// asks librdkafka once (an op to the consumer group, safe outside Close)
// and caches the answer: the protocol does not change during a client's
// life (librdkafka requires all configured assignors to share one).
func (r *runner) cooperative() bool {
	if r.protocol == "" {
		r.protocol = r.c.GetRebalanceProtocol()
	}
	return r.protocol == "COOPERATIVE"
}

// answerInClose answers a rebalance librdkafka raised inside Close: assign
// or unassign exactly what it asks, nothing else. It reads only fields set
// before Close started, as it may run on the close goroutine after Run
// returned. Without a cached protocol it infers it from the configuration
// rather than asking librdkafka, whose answer may never come once the
// group terminated (confluent-kafka-go#1016).
func (r *runner) answerInClose(ev kafka.Event) {
	cooperative := r.protocol == "COOPERATIVE"
	if r.protocol == "" {
		strategy, _ := r.k.cfg.Overrides["partition.assignment.strategy"].(string)
		cooperative = r.k.cfg.consumerProtocol() || strategy == "" || strings.Contains(strategy, "cooperative")
	}
	var err error
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		if cooperative {
			err = r.c.IncrementalAssign(e.Partitions)
		} else {
			err = r.c.Assign(e.Partitions)
		}
	case kafka.RevokedPartitions:
		if cooperative {
			err = r.c.IncrementalUnassign(e.Partitions)
		} else {
			err = r.c.Unassign()
		}
	}
	r.log.Warn("rebalance callback served inside Close", "event", ev.String(), "err", err)
}

// assigned serves an assignment (rebalance.Core.Assigned), resumes the
// partitions of it given up while paused (resumeLeftPaused), then gives
// librdkafka the partitions.
//
// The resume comes before the assign call, while librdkafka does nothing
// with those partitions: librdkafka (v2.11.1) orders the operations on a
// partition by a version each takes when it is created
// (rd_kafka_toppar_version_new_barrier, src/rdkafka_partition.c) and
// drops one served after a newer one (rd_kafka_toppar_op_serve: "received
// outdated op"). After the assign call its main thread starts the
// partitions (a library resume and a fetch start, once the committed
// offsets are fetched); a resume sent from here meanwhile can take an
// older version than theirs and reach the queue after them, and is then
// dropped: the partition stays paused by the application, never fetched.
func (r *runner) assigned(parts []kafka.TopicPartition, cooperative bool) {
	tps := pipelineTPs(parts)
	r.forgetRestarts(tps) // started from the group's commit
	if r.fatal == nil {
		r.recordTopicIDs(tps)
		if start, err := r.core.Claim(tps); err != nil {
			r.fatal = err
		} else {
			startAt(parts, start)
			r.core.Assigned(tps, "cooperative", cooperative)
		}
	}
	r.resumeLeftPaused(tps)
	var err error
	if cooperative {
		err = r.c.IncrementalAssign(parts)
	} else {
		err = r.c.Assign(parts)
	}
	if err != nil {
		r.fatal = fmt.Errorf("source: assign partitions %v: %w", tps, err)
	}
}

// resumeLeftPaused resumes the partitions of tps given up while paused:
// librdkafka keeps a partition paused across revoke and re-assign (and
// across a loss the source serves itself), so whatever was paused in an
// earlier assignment must not stay paused. Only those are resumed
// (resuming a partition that is not paused is not a no-op in every
// librdkafka version). A partition given up in a rebalance is resumed
// before it is assigned again (see assigned).
func (r *runner) resumeLeftPaused(tps []sluice.TopicPartition) {
	var stale []sluice.TopicPartition
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

// revoked serves a revoke or, when librdkafka reports the assignment
// lost, a loss (rebalance.Core.Revoked, Core.Lost) while librdkafka still
// holds the partitions, then unassigns them. Under KIP-848 a revoked
// partition whose topic is not the one assigned any more (another topic
// ID, see topic_ids.go) is served as lost: the revoke names only the
// topic, and its commit, by name, would put the old topic's offsets onto
// the new one.
func (r *runner) revoked(parts []kafka.TopicPartition, cooperative, lost bool) {
	tps := pipelineTPs(parts)
	if lost {
		r.core.Lost(tps)
	} else {
		keep, gone := r.splitRevoked(tps)
		if len(gone) > 0 {
			r.core.Lost(gone)
		}
		if len(keep) > 0 {
			r.core.Revoked(keep, "cooperative", cooperative)
		}
	}
	r.forgetTopicIDs()
	r.forgetRestarts(tps)
	r.unassign(parts, cooperative)
}

// GaveUpPaused remembers tps: librdkafka keeps them paused, so a later
// assignment resumes them, before it gives them to librdkafka (see
// assigned).
func (r *runner) GaveUpPaused(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		r.leftPaused[tp] = true
	}
}

func (r *runner) unassign(parts []kafka.TopicPartition, cooperative bool) {
	var err error
	if cooperative {
		err = r.c.IncrementalUnassign(parts)
	} else {
		err = r.c.Unassign()
	}
	if err != nil && !r.core.Closing() {
		r.log.Warn("unassign failed", "partitions", pipelineTPs(parts), "err", err)
	}
}

// startAt sets the start offset of each partition of parts that start
// names (the offset store's claim); librdkafka's assign calls start a
// partition there instead of at the group's committed offset.
func startAt(parts []kafka.TopicPartition, start map[sluice.TopicPartition]int64) {
	for i := range parts {
		tp := sluice.TopicPartition{Topic: *parts[i].Topic, Partition: parts[i].Partition}
		if off, ok := start[tp]; ok {
			parts[i].Offset = kafka.Offset(off)
		}
	}
}
