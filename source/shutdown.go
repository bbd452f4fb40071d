package source

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/rebalance"
)

// Why the source leaves the group before closing the client.
//
// confluent-kafka-go's Close (v2.11.1 consumer.go) calls
// rd_kafka_consumer_close_queue and then polls until
// rd_kafka_consumer_closed, serving the rebalance callbacks the close
// raises: librdkafka's rd_kafka_cgrp_terminate0 unsubscribes, which makes
// rd_kafka_cgrp_revoke_all_rejoin queue a revoke of the whole assignment,
// and an assignment still pending from a rebalance in progress is served
// first (rd_kafka_cgrp_handle_assign_op turns it into a full unassign).
// Every *assign call a callback makes (and GetRebalanceProtocol) is an op
// sent to the consumer group with rd_kafka_op_req(..., RD_POLL_INFINITE).
// Once the group has terminated (rd_kafka_cgrp_terminated sets
// rkcg_terminated), rd_kafka_cgrp_op_serve destroys such an op without
// replying, so a callback that raced with the termination blocks forever
// (librdkafka#4884, open; confluent-kafka-go#1016, for
// GetRebalanceProtocol). That is the observed hang: Close -> Poll ->
// rebalance -> IncrementalUnassign, stopped mid-rebalance.
//
// So the source never lets Close serve a rebalance: it unsubscribes
// itself, serves the resulting revoke (and any assignment still pending
// before it) in its own poll loop, waits until the assignment is empty and
// the queue quiet (the workaround on librdkafka#4527), and only then
// closes the client, which has nothing left to call back for. Every step
// is bounded by Config.CloseTimeout; Close runs on its own goroutine so a
// hang in librdkafka cannot hang Run.

// Leave unsubscribes and serves the revoke that follows (see leave). When
// the client raised a fatal error meanwhile it returns it: Close would
// never return (see Run).
func (r *runner) Leave(deadline time.Time) error {
	r.leave(deadline)
	if r.fatalClose {
		return r.fatal
	}
	return nil
}

// BeforeFinalCommit loses the partitions of a topic librdkafka reported
// recreated (topicsRecreated) and, under KIP-848, of a topic whose ID
// changed since its assignment (loseChangedTopics, its request bounded by
// deadline), so that no attempt of the final commit carries an offset of
// the old topic onto the new one (librdkafka commits by name). The
// rebalances that come meanwhile are served inside Poll
// (WaitToRetryCommit, leave).
func (r *runner) BeforeFinalCommit(deadline time.Time) {
	r.topicsRecreated()
	r.loseChangedTopics(deadline)
}

// WaitToRetryCommit polls (records dropped, callbacks served) for d, so
// that the rebalance in progress can complete.
func (r *runner) WaitToRetryCommit(d time.Duration) { r.pollClosing(d) }

// leave unsubscribes and serves the revoke that follows (and an
// assignment still pending before it) until librdkafka holds no assignment
// and a poll brought nothing, or deadline. Past deadline it logs what is
// still assigned and returns: Close, bounded as well, does the rest.
func (r *runner) leave(deadline time.Time) {
	if err := r.c.Unsubscribe(); err != nil {
		r.log.Warn("unsubscribe failed; closing the client directly", "err", err)
		return
	}
	began := time.Now()
	for {
		quiet := r.pollClosing(rebalance.PollIdle)
		if r.fatal != nil {
			return
		}
		parts, err := r.c.Assignment()
		if err == nil && len(parts) == 0 && quiet {
			r.log.Debug("left the group", "took", time.Since(began).String())
			return
		}
		if !time.Now().Before(deadline) {
			r.log.Warn("leaving the group did not finish in time; closing the client anyway",
				"assigned", pipelineTPs(parts), "err", err)
			return
		}
	}
}

// pollClosing polls after Shutdown: records are dropped, rebalance
// callbacks only answer librdkafka (see revoked, assigned), other events
// are handled as usual. It waits up to timeout for the first event and
// reports whether none came and no callback ran.
func (r *runner) pollClosing(timeout time.Duration) (quiet bool) {
	before := r.callbacks
	ms := int(timeout.Milliseconds())
	quiet = true
	for range 4 * rebalance.MaxBatch {
		ev := r.c.Poll(ms)
		ms = 0
		if ev == nil {
			break
		}
		quiet = false
		if _, ok := ev.(*kafka.Message); !ok {
			r.event(ev)
		}
	}
	return quiet && r.callbacks == before
}

// Close closes the client on its own goroutine and waits for it until
// deadline (at the earliest now). Callbacks served inside Close only
// answer librdkafka. Past deadline Close is left running: the error says
// so.
func (r *runner) Close(deadline time.Time) error {
	r.inClose, r.closed = true, true
	finished, err := r.core.CloseClient(deadline, r.c.Close)
	r.closeFinished = finished
	return err
}
