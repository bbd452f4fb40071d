package source

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

// Offsets flow: every CommitInterval the poll loop collects Group.Offsets
// and stores them in librdkafka (rd_kafka_offsets_store, local and cheap);
// librdkafka's auto-committer commits stored offsets asynchronously every
// auto.commit.interval.ms (= CommitInterval), so an offset reaches the
// broker within about two intervals without blocking the poll loop. On
// revoke and shutdown the offsets are stored and then committed
// synchronously, bounded by Config.CloseTimeout. Storing before the synchronous commit keeps librdkafka's
// own commit-on-unassign from committing an older stored offset after ours.
// librdkafka clears stored offsets of removed partitions and never commits
// for a lost assignment; the owned-set fence keeps the source from storing
// offsets of partitions it does not own.

// store stores the offsets of owned partitions for the background commit,
// together with earlier offsets whose store failed (Group.Offsets reports
// an offset only once, when it moves). A failed store, of the whole call
// or of one partition, is kept and retried at the next interval.
func (r *runner) store(offs []pipeline.Offset) {
	for _, o := range offs {
		r.unstored[o.TopicPartition] = o.Next // the newest supersedes a failed one
	}
	pending := make([]pipeline.Offset, 0, len(r.unstored))
	for tp, next := range r.unstored {
		if !r.owned[tp] {
			delete(r.unstored, tp) // revoked or lost: never stored
			r.log.Debug("fenced offset of unowned partition", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)), slog.Int64("next", next))
			continue
		}
		pending = append(pending, pipeline.Offset{TopicPartition: tp, Next: next})
	}
	kos := r.toKafka(pending)
	if len(kos) == 0 {
		return
	}
	stored, err := r.k.storeOffsets(r.c, kos)
	if err != nil && len(stored) == 0 {
		r.log.Warn("store offsets failed; retrying at the next interval", "offsets", pending, "err", err)
		return
	}
	failed := map[pipeline.TopicPartition]error{}
	for _, ko := range stored {
		if ko.Error != nil {
			failed[pipeline.TopicPartition{Topic: topicOf(ko), Partition: ko.Partition}] = ko.Error
		}
	}
	if err != nil && len(failed) == 0 {
		r.log.Warn("store offsets failed; retrying at the next interval", "offsets", pending, "err", err)
		return
	}
	for _, o := range pending {
		if ferr, ok := failed[o.TopicPartition]; ok {
			r.log.Warn("store offset failed; retrying at the next interval",
				"topic", o.Topic, "partition", o.Partition, "next", o.Next, "err", ferr)
			continue
		}
		delete(r.unstored, o.TopicPartition)
	}
}

// commitSync stores and synchronously commits offs (callers fence them
// themselves), waiting for librdkafka until deadline. confluent-kafka-go's
// CommitOffsets waits for the commit's reply with no timeout
// (rd_kafka_queue_poll(..., -1) in consumer.go commit), and librdkafka
// holds a commit up to session.timeout.ms while the coordinator is
// unknown (rd_kafka_cgrp_defer_offset_commit) plus the request's own
// socket.timeout.ms: the call runs on its own goroutine and, past
// deadline, is left to finish in the background. finished reports whether
// it returned in time; err is its error, or the timeout.
func (r *runner) commitSync(offs []pipeline.Offset, why string, deadline time.Time) (finished bool, err error) {
	kos := r.toKafka(offs)
	if len(kos) == 0 {
		return true, nil
	}
	for _, o := range offs {
		delete(r.unstored, o.TopicPartition) // stored below, with the commit
	}
	if _, err := r.k.storeOffsets(r.c, kos); err != nil {
		r.log.Debug("store offsets before commit failed", "why", why, "err", err)
	}
	began := time.Now()
	done := make(chan error, 1)
	r.k.background.Add(1)
	go func() {
		defer r.k.background.Done()
		_, err := r.c.CommitOffsets(kos)
		done <- err
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case err = <-done:
		finished = true
	case <-t.C:
		err = fmt.Errorf("commit did not finish after %v", time.Since(began).Round(time.Millisecond))
	}
	r.g.Committed(fromKafka(kos), time.Since(began), err)
	switch {
	case !finished:
		r.log.Warn("commit did not finish in time; it goes on in the background", "why", why, "offsets", offs, "err", err)
	case err != nil:
		r.commitError(err, why, offs)
	default:
		r.log.Debug("offsets committed", "why", why, "offsets", offs)
	}
	return finished, err
}

// committed handles the result of a background commit. librdkafka does not
// report how long it took, so Group.Committed gets a zero duration.
func (r *runner) committed(e kafka.OffsetsCommitted) {
	var kerr kafka.Error
	if errors.As(e.Error, &kerr) && kerr.Code() == kafka.ErrNoOffset {
		return // nothing was stored: no commit happened
	}
	offs := fromKafka(e.Offsets)
	if len(offs) > 0 || e.Error != nil {
		r.g.Committed(offs, 0, e.Error)
	}
	if e.Error != nil {
		r.commitError(e.Error, "interval", offs)
	}
}

// fromKafka converts committed offsets, skipping partitions without a
// valid offset.
func fromKafka(kos []kafka.TopicPartition) []pipeline.Offset {
	out := make([]pipeline.Offset, 0, len(kos))
	for _, ko := range kos {
		if ko.Offset < 0 || ko.Error != nil {
			continue
		}
		out = append(out, pipeline.Offset{
			TopicPartition: pipeline.TopicPartition{Topic: topicOf(ko), Partition: ko.Partition},
			Next:           int64(ko.Offset),
		})
	}
	return out
}

func (r *runner) commitError(err error, why string, offs []pipeline.Offset) {
	var kerr kafka.Error
	if errors.As(err, &kerr) && kerr.Code() == kafka.ErrNoOffset {
		return // nothing stored to commit
	}
	if expectedCommitError(err) {
		// Expected around rebalances: another member owns the partition
		// now or will commit after the rebalance.
		r.log.Debug("commit rejected during rebalance", "why", why, "err", err, "offsets", offs)
		return
	}
	r.log.Warn("commit failed", "why", why, "err", err, "offsets", offs)
}

// expectedCommitError reports whether err is a commit rejection expected
// around rebalances: the group moved on (another member owns the
// partition now) or is rebalancing.
func expectedCommitError(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr.Code() {
	case kafka.ErrRebalanceInProgress, kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID,
		kafka.ErrStaleMemberEpoch, kafka.ErrAssignmentLost, kafka.ErrFencedInstanceID:
		return true
	}
	return false
}

func (r *runner) toKafka(offs []pipeline.Offset) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(offs))
	for _, o := range offs {
		if o.Next < 0 {
			continue
		}
		topic := o.Topic
		out = append(out, kafka.TopicPartition{Topic: &topic, Partition: o.Partition, Offset: kafka.Offset(o.Next)})
	}
	return out
}
