package source

import (
	"errors"
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
// synchronously. Storing before the synchronous commit keeps librdkafka's
// own commit-on-unassign from committing an older stored offset after ours.
// librdkafka clears stored offsets of removed partitions and never commits
// for a lost assignment; the owned-set fence keeps the source from storing
// offsets of partitions it does not own.

// store stores the offsets of owned partitions for the background commit.
func (r *runner) store(offs []pipeline.Offset) {
	kos := r.fenced(offs)
	if len(kos) == 0 {
		return
	}
	if _, err := r.c.StoreOffsets(kos); err != nil {
		r.log.Warn("store offsets failed", "err", err)
	}
}

// commitSync stores and synchronously commits the offsets of owned
// partitions (callers filter revoked partitions themselves, before
// dropping them from the owned set).
func (r *runner) commitSync(offs []pipeline.Offset, why string) {
	kos := r.toKafka(offs)
	if len(kos) == 0 {
		return
	}
	if _, err := r.c.StoreOffsets(kos); err != nil {
		r.log.Debug("store offsets before commit failed", "why", why, "err", err)
	}
	began := time.Now()
	_, err := r.c.CommitOffsets(kos)
	r.g.Committed(fromKafka(kos), time.Since(began), err)
	if err != nil {
		r.commitError(err, why, offs)
		return
	}
	r.log.Debug("offsets committed", "why", why, "offsets", offs)
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
	if errors.As(err, &kerr) {
		switch kerr.Code() {
		case kafka.ErrNoOffset:
			return // nothing stored to commit
		case kafka.ErrRebalanceInProgress, kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID,
			kafka.ErrStaleMemberEpoch, kafka.ErrAssignmentLost, kafka.ErrFencedInstanceID:
			// Expected around rebalances: another member owns the
			// partition now or will commit after the rebalance.
			r.log.Debug("commit rejected during rebalance", "why", why, "err", err, "offsets", offs)
			return
		}
	}
	r.log.Warn("commit failed", "why", why, "err", err, "offsets", offs)
}

// fenced converts the offsets of owned partitions, dropping the others.
func (r *runner) fenced(offs []pipeline.Offset) []kafka.TopicPartition {
	kept := offs[:0:0]
	for _, o := range offs {
		if r.owned[o.TopicPartition] {
			kept = append(kept, o)
		} else {
			r.log.Debug("fenced offset of unowned partition", slog.String("topic", o.Topic), slog.Int("partition", int(o.Partition)), slog.Int64("next", o.Next))
		}
	}
	return r.toKafka(kept)
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
