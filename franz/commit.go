package franz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
)

// Offsets flow, as in the Kafka source. kgo's auto-commit is off
// (kgo.DisableAutoCommit): the source sends every commit itself, with
// CommitOffsetsSync on a goroutine of its own, never more than one at a
// time.
//
//   - Every CommitInterval the poll loop collects Group.Offsets into
//     pending (newest offset per owned partition) and, when no commit is
//     in flight, sends pending as one background commit. The loop picks
//     its outcome up on a later round; a failed one puts its offsets back
//     into pending (unless newer ones came or the partition was given up).
//   - A revoke or shutdown first waits for the commit in flight, then
//     sends its synchronous commit and waits for it, both within one
//     commit timeout (40% of CloseTimeout). One that cannot be sent in
//     time is reported failed; one sent but unanswered in time is
//     abandoned and stays the commit in flight, so nothing else is sent
//     before kgo is done with it.
//   - A loss drops the lost partitions' pending offsets and waits
//     (bounded the same) for a commit in flight that holds one of them.
//
// Every commit runs under a context bounded by CloseTimeout, so kgo gives
// up on it (it retries retriable errors itself) within that bound. Commits
// go to the coordinator one after the other, and an offset sent later is
// never older than one sent before for the same ownership. Offsets of
// partitions the source does not own are never sent (the owned-set fence,
// applied when offsets are collected and again when a commit is sent).

// commitRequest is one commit the source sent; r.inflight holds it until
// its outcome was handled on the poll goroutine.
type commitRequest struct {
	offs      []pipeline.Offset
	owner     map[pipeline.TopicPartition]uint64
	why       string // "interval", "revoke", "shutdown"
	began     time.Time
	done      chan commitOutcome // buffered: the commit's goroutine never blocks
	abandoned bool
}

type commitOutcome struct {
	failed []pipeline.Offset // offsets not committed
	err    error
	took   time.Duration
}

// CommitError is the error the source reports to Group.Committed (and so
// to the commit hooks given to pipeline.Run) for a commit that failed, was
// not answered in time or could not be sent. Unwrap returns the cause, a
// kerr.Error when the broker rejected the commit. The source reports it on
// its poll goroutine, once per commit.
type CommitError struct {
	// Reason is what the commit was for: "interval", "revoke" or
	// "shutdown".
	Reason string
	// Offsets are the offsets the commit was sent (or meant to be sent) for.
	Offsets []pipeline.Offset
	// Err is the cause.
	Err error
}

// Error names the commit, its offsets and the cause.
func (e *CommitError) Error() string {
	return fmt.Sprintf("franz: %s commit of %s: %v", e.Reason, offsetsString(e.Offsets), e.Err)
}

// Unwrap returns the cause.
func (e *CommitError) Unwrap() error { return e.Err }

// collect adds offsets reported by Group.Offsets to pending, fenced to
// owned partitions.
func (r *runner) collect(offs []pipeline.Offset) {
	for _, o := range offs {
		if r.owned[o.TopicPartition] && o.Next >= 0 {
			r.pending[o.TopicPartition] = o.Next
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
	clear(r.pending)
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

// send starts the commit of offs on its own goroutine and makes it the
// commit in flight. The caller made sure none was.
func (r *runner) send(offs []pipeline.Offset, why string) *commitRequest {
	req := &commitRequest{
		offs:  offs,
		owner: make(map[pipeline.TopicPartition]uint64, len(offs)),
		why:   why,
		began: time.Now(),
		done:  make(chan commitOutcome, 1),
	}
	m := make(map[string]map[int32]kgo.EpochOffset)
	for _, o := range offs {
		req.owner[o.TopicPartition] = r.ownership[o.TopicPartition]
		if m[o.Topic] == nil {
			m[o.Topic] = make(map[int32]kgo.EpochOffset)
		}
		m[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Next}
	}
	cl, timeout := r.cl, r.s.cfg.closeTimeout()
	r.s.background.Add(1)
	go func() {
		defer r.s.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		began := time.Now()
		var out commitOutcome
		cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			out.failed, out.err = commitFailures(offs, resp, err)
		})
		out.took = time.Since(began)
		req.done <- out
	}()
	r.inflight = req
	return req
}

// commitFailures returns the offsets of offs that the commit did not
// commit and the error to report.
func commitFailures(offs []pipeline.Offset, resp *kmsg.OffsetCommitResponse, err error) ([]pipeline.Offset, error) {
	if err != nil {
		return offs, err
	}
	var failed []pipeline.Offset
	var first error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			perr := kerr.ErrorForCode(p.ErrorCode)
			if perr == nil {
				continue
			}
			if first == nil {
				first = perr
			}
			tp := pipeline.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			for _, o := range offs {
				if o.TopicPartition == tp {
					failed = append(failed, o)
				}
			}
		}
	}
	if first == nil {
		return nil, nil
	}
	return failed, fmt.Errorf("partitions %s not committed: %w", offsetsString(failed), first)
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
// returns its error. A failed background commit puts the offsets that
// failed back into pending.
func (r *runner) finish(req *commitRequest, out commitOutcome) error {
	r.inflight = nil
	if req.abandoned {
		r.log.Info("an abandoned commit finished", "why", req.why, "offsets", req.offs, "took", out.took, "err", out.err)
		return out.err
	}
	r.report(req.why, req.offs, out.took, out.err)
	if req.why != "interval" {
		return out.err
	}
	for _, o := range out.failed {
		_, newer := r.pending[o.TopicPartition]
		if r.owned[o.TopicPartition] && r.ownership[o.TopicPartition] == req.owner[o.TopicPartition] && !newer {
			r.pending[o.TopicPartition] = o.Next
		}
	}
	return out.err
}

// report tells the group the outcome of a commit and logs it.
func (r *runner) report(why string, offs []pipeline.Offset, took time.Duration, err error) {
	if err == nil {
		r.g.Committed(offs, took, nil)
		r.log.Debug("offsets committed", "why", why, "offsets", offs, "took", took)
		return
	}
	r.g.Committed(offs, took, &CommitError{Reason: why, Offsets: offs, Err: err})
	if expectedCommitError(err) {
		r.log.Debug("commit rejected during rebalance", "why", why, "err", err, "offsets", offs)
		return
	}
	r.log.Warn("commit failed", "why", why, "err", err, "offsets", offs)
}

// commitSync commits offs once the commit in flight, if any, was
// answered, waiting for both until deadline. finished reports whether the
// commit was sent and answered in time; err is its error, or why it did
// not finish.
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
// land after the next owner's commits.
func (r *runner) awaitLost(tps []pipeline.TopicPartition) {
	if r.inflight == nil || len(filterTPs(r.inflight.offs, tps)) == 0 {
		return
	}
	prev := r.inflight
	if !r.await(time.Now().Add(r.s.cfg.commitTimeout())) {
		r.log.Warn("the commit in flight of lost partitions did not finish in time; it may still land after the next owner's",
			"why", prev.why, "offsets", prev.offs, "lost", tps)
	}
}

// expectedCommitError reports whether err is a commit rejection expected
// around rebalances: the group moved on or is rebalancing.
func expectedCommitError(err error) bool {
	for _, e := range []error{kerr.RebalanceInProgress, kerr.IllegalGeneration, kerr.UnknownMemberID,
		kerr.StaleMemberEpoch, kerr.FencedInstanceID, kerr.FencedMemberEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// mergeOffsets returns the union of a and b, keeping the highest offset
// of a partition in both.
func mergeOffsets(a, b []pipeline.Offset) []pipeline.Offset {
	idx := make(map[pipeline.TopicPartition]int, len(a)+len(b))
	out := make([]pipeline.Offset, 0, len(a)+len(b))
	for _, o := range slices.Concat(a, b) {
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

// offsetsString renders offsets as topic/partition@next, for errors.
func offsetsString(offs []pipeline.Offset) string {
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Next)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
