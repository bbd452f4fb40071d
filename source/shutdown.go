package source

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
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

// finalCommitRetry is how long the final commit waits (polling) before
// retrying after REBALANCE_IN_PROGRESS.
const finalCommitRetry = 100 * time.Millisecond

// stop is the shutdown sequence, run when ctx is done: drain (Group.Shutdown),
// final commit, leave the group, close the client. It returns the steps
// that did not finish.
func (r *runner) stop() error {
	r.flush()
	offs := r.g.Shutdown()
	r.closing = true
	clear(r.paused)
	owned := r.ownedList()
	final := mergeOffsets(filterTPs(offs, owned), r.takePending(owned))
	clear(r.pending)
	began := time.Now()
	// commitFinal waits for the background commit in flight first, so
	// that the final commit is the last one sent.
	commitErr := r.commitFinal(final, began.Add(r.k.cfg.commitTimeout()))
	return errors.Join(commitErr, r.leaveAndClose(began))
}

// leaveAndClose leaves the group and closes the client, within
// Config.CloseTimeout counted from began: the final commit and leaving
// until its commit share (see commitTimeout), but leaving gets at least a
// tenth of it; Close the rest. Nothing is owned any more afterwards.
func (r *runner) leaveAndClose(began time.Time) error {
	r.closing = true
	clear(r.owned)
	timeout := r.k.cfg.closeTimeout()
	leaveBy := began.Add(r.k.cfg.commitTimeout())
	if least := time.Now().Add(timeout / 10); leaveBy.Before(least) {
		leaveBy = least
	}
	r.leave(leaveBy)
	if r.fatalClose {
		// A fatal error while leaving: Close would never return (see Run).
		return r.fatal
	}
	return r.closeClient(began.Add(timeout))
}

// commitFinal commits offs synchronously, retrying while the coordinator
// answers REBALANCE_IN_PROGRESS (a commit sent between a JoinGroup and its
// SyncGroup) until deadline, and polling meanwhile so that the rebalance
// can complete. A partition revoked by a callback served meanwhile is no
// longer owned and is dropped from the retry. Its error wraps the last
// commit error.
func (r *runner) commitFinal(offs []pipeline.Offset, deadline time.Time) error {
	for {
		offs = filterTPs(offs, r.ownedList())
		if len(offs) == 0 {
			return nil
		}
		finished, err := r.commitSync(offs, "shutdown", deadline)
		switch {
		case !finished:
			return fmt.Errorf("source: shutdown: the final commit of %s did not finish within Config.CloseTimeout (%v): %w",
				offsetsString(offs), r.k.cfg.closeTimeout(), err)
		case err == nil, !retriableCommit(err) && expectedCommitError(err):
			return nil // committed, or the group moved on (logged)
		case !retriableCommit(err):
			return fmt.Errorf("source: shutdown: the final commit of %s failed: %w", offsetsString(offs), err)
		case time.Until(deadline) < 2*finalCommitRetry:
			return fmt.Errorf("source: shutdown: the final commit of %s was still rejected at the end of its share of Config.CloseTimeout (%v): %w",
				offsetsString(offs), r.k.cfg.closeTimeout(), err)
		}
		r.pollClosing(finalCommitRetry)
	}
}

// offsetsString renders offsets as topic/partition@next, for errors.
func offsetsString(offs []pipeline.Offset) string {
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Next)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// retriableCommit reports whether a commit rejected with err may succeed
// once the rebalance in progress completes.
func retriableCommit(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && kerr.Code() == kafka.ErrRebalanceInProgress
}

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
		quiet := r.pollClosing(pollIdle)
		if r.fatal != nil {
			return
		}
		parts, err := r.c.Assignment()
		if err == nil && len(parts) == 0 && quiet {
			r.log.Debug("left the group", "took", time.Since(began))
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
	for range 4 * maxBatch {
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

// closeClient closes the client on its own goroutine and waits for it
// until deadline (at the earliest now). Callbacks served inside Close only
// answer librdkafka. Past deadline Close is left running: the error says
// so.
func (r *runner) closeClient(deadline time.Time) error {
	r.closing, r.inClose, r.closed = true, true, true
	began := time.Now()
	done := make(chan error, 1)
	r.k.background.Add(1)
	go func() {
		defer r.k.background.Done()
		done <- r.c.Close()
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case err := <-done:
		r.closeFinished = true
		if err != nil {
			r.log.Warn("close failed", "err", err)
		}
		r.log.Debug("client closed", "took", time.Since(began))
		return nil
	case <-t.C:
		r.log.Error("closing the client did not finish in time; it goes on in the background",
			"timeout", r.k.cfg.closeTimeout())
		return fmt.Errorf("source: shutdown: closing the client did not finish within Config.CloseTimeout (%v); it goes on in the background",
			r.k.cfg.closeTimeout())
	}
}
