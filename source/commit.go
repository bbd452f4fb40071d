package source

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

// Offsets flow. librdkafka's auto-committer is off (enable.auto.commit=false)
// and nothing is stored in librdkafka: the source sends every commit
// itself, with CommitOffsets, and never more than one at a time.
//
//   - Every CommitInterval the poll loop collects Group.Offsets into
//     pending (newest offset per owned partition) and, when no commit is
//     in flight, hands pending to one background commit: a goroutine
//     calling CommitOffsets, which returns once librdkafka has the final
//     answer, after its own retries (rd_kafka_handle_OffsetCommit retries
//     NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and REQUEST_TIMED_OUT, then
//     defers the commit until the coordinator is back). An interval that
//     finds a commit in flight sends once it is answered. The poll loop
//     never waits for a background commit; it picks the outcome up on its
//     next round.
//   - A failed background commit puts its offsets back into pending
//     (unless newer ones came, or the partition was given up meanwhile):
//     the next interval retries them.
//   - A revoke or shutdown first waits for the commit in flight, then
//     sends its synchronous commit (the drained partitions' offsets,
//     merged with what was pending for them) and waits for it, both
//     within one commit timeout (40% of CloseTimeout). A synchronous
//     commit that cannot be sent in time (the earlier one is still
//     unanswered) is reported as failed; one sent but unanswered in time
//     is abandoned and stays the commit in flight, so nothing else is
//     sent before librdkafka answers it.
//   - A loss drops the lost partitions' pending offsets and, when the
//     commit in flight holds one of them, waits for it (bounded the same)
//     before the partitions are unassigned: librdkafka rebuilds a deferred
//     commit with the generation it has when the coordinator comes back
//     (rd_kafka_cgrp_offsets_commit), so the generation alone does not keep
//     it from landing after the next owner's commits.
//
// So commits reach the broker in the order they were sent, one after the
// other, and an offset sent later is never older than one sent before for
// the same ownership of a partition. Offsets of partitions the source does
// not own are never sent (the owned-set fence, applied when offsets are
// collected and again when a commit is sent). With enable.auto.commit=false
// librdkafka commits nothing on its own, neither on unassign nor on close
// (rd_kafka_assignment_serve_removals, rd_kafka_cgrp_new).

// commitRequest is one CommitOffsets call the source made; r.inflight
// holds it until its outcome was handled on the poll goroutine.
type commitRequest struct {
	offs  []pipeline.Offset
	owner map[pipeline.TopicPartition]uint64 // the ownership each offset belongs to
	why   string                             // "interval", "revoke", "shutdown"
	began time.Time
	done  chan commitOutcome // buffered: the call's goroutine never blocks
	// abandoned: a synchronous caller stopped waiting and reported the
	// commit as failed; its outcome is only logged.
	abandoned bool
}

type commitOutcome struct {
	kos  []kafka.TopicPartition // as returned by CommitOffsets (per-partition errors)
	err  error
	took time.Duration
}

// collect adds offsets reported by Group.Offsets to pending, fenced to
// owned partitions.
func (r *runner) collect(offs []pipeline.Offset) {
	for _, o := range offs {
		if !r.owned[o.TopicPartition] {
			r.log.Debug("fenced offset of unowned partition", slog.String("topic", o.Topic), slog.Int("partition", int(o.Partition)), slog.Int64("next", o.Next))
			continue
		}
		if o.Next >= 0 {
			r.pending[o.TopicPartition] = o.Next // the runtime reports offsets moving forward only
		}
	}
}

// commitPending starts the background commit of pending when an interval
// asked for one and no commit is in flight.
func (r *runner) commitPending() {
	if !r.commitDue || r.inflight != nil || r.closing {
		return
	}
	r.commitDue = false
	offs := r.takePending(r.ownedList())
	clear(r.pending) // what was left is not owned: never sent
	if len(offs) > 0 {
		r.send(offs, "interval")
	}
}

// takePending removes the pending offsets of tps and returns them.
func (r *runner) takePending(tps []pipeline.TopicPartition) []pipeline.Offset {
	var out []pipeline.Offset
	for _, tp := range tps {
		if next, ok := r.pending[tp]; ok {
			out = append(out, pipeline.Offset{TopicPartition: tp, Next: next})
			delete(r.pending, tp)
		}
	}
	return out
}

// send starts CommitOffsets of offs on its own goroutine and makes it the
// commit in flight. The caller made sure none was.
func (r *runner) send(offs []pipeline.Offset, why string) *commitRequest {
	req := &commitRequest{
		offs:  offs,
		owner: make(map[pipeline.TopicPartition]uint64, len(offs)),
		why:   why,
		began: time.Now(),
		done:  make(chan commitOutcome, 1),
	}
	for _, o := range offs {
		req.owner[o.TopicPartition] = r.ownership[o.TopicPartition]
	}
	kos := toKafka(offs)
	commit, c := r.k.commitOffsets, r.c
	r.k.background.Add(1)
	go func() {
		defer r.k.background.Done()
		began := time.Now()
		res, err := commit(c, kos)
		req.done <- commitOutcome{kos: res, err: err, took: time.Since(began)}
	}()
	r.inflight = req
	return req
}

// reap handles the outcome of the commit in flight if it came.
func (r *runner) reap() {
	if r.inflight == nil {
		return
	}
	select {
	case out := <-r.inflight.done:
		r.finish(r.inflight, out)
	default:
	}
}

// await waits until deadline for the commit in flight, handling its
// outcome. It reports whether no commit is in flight any more.
func (r *runner) await(deadline time.Time) bool {
	if r.inflight == nil {
		return true
	}
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case out := <-r.inflight.done:
		r.finish(r.inflight, out)
		return true
	case <-t.C:
		return false
	}
}

// finish handles the outcome of req, which is no longer in flight, and
// returns its error (a request-level one, or one naming the partitions
// that failed). A failed background commit puts the offsets that failed
// back into pending.
func (r *runner) finish(req *commitRequest, out commitOutcome) error {
	r.inflight = nil
	failed, err := commitFailures(req.offs, out)
	if req.abandoned {
		r.log.Info("an abandoned commit finished", "why", req.why, "offsets", req.offs, "took", out.took, "err", err)
		return err
	}
	r.report(req.why, req.offs, out.took, err)
	if req.why != "interval" {
		return err
	}
	for _, o := range failed {
		_, newer := r.pending[o.TopicPartition]
		if r.owned[o.TopicPartition] && r.ownership[o.TopicPartition] == req.owner[o.TopicPartition] && !newer {
			r.pending[o.TopicPartition] = o.Next // retried at the next interval
		}
	}
	return err
}

// commitFailures returns the offsets of offs that out did not commit and
// the error to report.
func commitFailures(offs []pipeline.Offset, out commitOutcome) ([]pipeline.Offset, error) {
	if out.err != nil {
		return offs, out.err
	}
	var failed []pipeline.Offset
	var first error
	for _, ko := range out.kos {
		if ko.Error == nil {
			continue
		}
		if first == nil {
			first = ko.Error
		}
		failed = append(failed, pipeline.Offset{
			TopicPartition: pipeline.TopicPartition{Topic: topicOf(ko), Partition: ko.Partition},
			Next:           int64(ko.Offset),
		})
	}
	if first == nil {
		return nil, nil
	}
	return failed, fmt.Errorf("partitions %s not committed: %w", offsetsString(failed), first)
}

// report tells the group the outcome of a commit and logs it.
func (r *runner) report(why string, offs []pipeline.Offset, took time.Duration, err error) {
	if err == nil {
		r.g.Committed(offs, took, nil)
		r.log.Debug("offsets committed", "why", why, "offsets", offs, "took", took)
		return
	}
	r.g.Committed(offs, took, &CommitError{Reason: why, Offsets: offs, Err: err})
	r.commitError(err, why, offs)
}

// commitSync commits offs (callers fence them themselves) once the commit
// in flight, if any, was answered, waiting for both until deadline. Past
// deadline a commit that was sent is abandoned (it stays in flight until
// librdkafka answers: confluent-kafka-go's CommitOffsets waits with no
// timeout, and librdkafka defers a commit up to session.timeout.ms while
// the coordinator is unknown, on top of socket.timeout.ms); one that could
// not be sent is not sent. finished reports whether the commit was sent
// and answered in time; err is its error, or why it did not finish.
func (r *runner) commitSync(offs []pipeline.Offset, why string, deadline time.Time) (finished bool, err error) {
	offs = validOffsets(offs)
	if len(offs) == 0 {
		return true, nil
	}
	began := time.Now()
	if !r.await(deadline) {
		prev := r.inflight
		err = fmt.Errorf("not sent: the earlier %s commit of %s was still unanswered after %v",
			prev.why, offsetsString(prev.offs), time.Since(prev.began).Round(time.Millisecond))
		r.log.Warn("commit not sent in time", "why", why, "offsets", offs, "err", err)
		r.g.Committed(offs, time.Since(began), &CommitError{Reason: why, Offsets: offs, Err: err})
		return false, err
	}
	req := r.send(offs, why)
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case out := <-req.done:
		return true, r.finish(req, out)
	case <-t.C:
		req.abandoned = true
		err = fmt.Errorf("commit did not finish after %v", time.Since(req.began).Round(time.Millisecond))
		r.log.Warn("commit did not finish in time; it goes on in the background", "why", why, "offsets", offs, "err", err)
		r.g.Committed(offs, time.Since(began), &CommitError{Reason: why, Offsets: offs, Err: err})
		return false, err
	}
}

// awaitLost waits, bounded by the commit timeout, for the commit in
// flight when it holds one of the lost partitions tps, so that it cannot
// land after the next owner's commits (see "Offsets flow").
func (r *runner) awaitLost(tps []pipeline.TopicPartition) {
	if r.inflight == nil || len(filterTPs(r.inflight.offs, tps)) == 0 {
		return
	}
	prev := r.inflight
	if !r.await(time.Now().Add(r.k.cfg.commitTimeout())) {
		r.log.Warn("the commit in flight of lost partitions did not finish in time; it may still land after the next owner's",
			"why", prev.why, "offsets", prev.offs, "lost", tps, "timeout", r.k.cfg.commitTimeout())
	}
}

// mergeOffsets returns the union of a and b, keeping the highest offset
// of a partition in both.
func mergeOffsets(a, b []pipeline.Offset) []pipeline.Offset {
	idx := make(map[pipeline.TopicPartition]int, len(a)+len(b))
	out := make([]pipeline.Offset, 0, len(a)+len(b))
	for _, o := range append(append([]pipeline.Offset(nil), a...), b...) {
		if i, ok := idx[o.TopicPartition]; ok {
			out[i].Next = max(out[i].Next, o.Next)
			continue
		}
		idx[o.TopicPartition] = len(out)
		out = append(out, o)
	}
	return out
}

// validOffsets drops logical (negative) offsets, which are never sent.
func validOffsets(offs []pipeline.Offset) []pipeline.Offset {
	out := offs[:0:0]
	for _, o := range offs {
		if o.Next >= 0 {
			out = append(out, o)
		}
	}
	return out
}

func toKafka(offs []pipeline.Offset) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(offs))
	for _, o := range offs {
		topic := o.Topic
		out = append(out, kafka.TopicPartition{Topic: &topic, Partition: o.Partition, Offset: kafka.Offset(o.Next)})
	}
	return out
}
