package source

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// Offsets flow: see internal/rebalance, which sends every commit, one at
// a time, through Commit. What is particular to librdkafka:
//
//   - Its auto-committer is off (enable.auto.commit=false) and nothing is
//     stored in it: with that, librdkafka commits nothing on its own,
//     neither on unassign nor on close (rd_kafka_assignment_serve_removals,
//     rd_kafka_cgrp_new).
//   - CommitOffsets returns once librdkafka has the final answer, after
//     its own retries (rd_kafka_handle_OffsetCommit retries
//     NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and REQUEST_TIMED_OUT,
//     then defers the commit until the coordinator is back), with no
//     timeout: a synchronous commit unanswered in time is abandoned and
//     stays in flight until librdkafka answers (it defers a commit up to
//     session.timeout.ms while the coordinator is unknown, on top of
//     socket.timeout.ms).
//   - A loss waits for the commit in flight of a lost partition because
//     librdkafka rebuilds a deferred commit with the generation it has
//     when the coordinator comes back (rd_kafka_cgrp_offsets_commit), so
//     the generation alone does not keep it from landing after the next
//     owner's commits.

// Commit commits offs with Kafka.commitOffsets (CommitOffsets), on the
// core's commit goroutine, and returns the partitions librdkafka reported
// an error for, with the offset it returned.
func (r *runner) Commit(offs []sluice.Offset) ([]rebalance.Rejected, error) {
	res, err := r.k.commitOffsets(r.c, toKafka(offs))
	if err != nil {
		return nil, err
	}
	var rejected []rebalance.Rejected
	for _, ko := range res {
		if ko.Error == nil {
			continue
		}
		rejected = append(rejected, rebalance.Rejected{
			Offset: sluice.Offset{
				TopicPartition: sluice.TopicPartition{Topic: topicOf(ko), Partition: ko.Partition},
				Next:           int64(ko.Offset),
			},
			Err: ko.Error,
		})
	}
	return rejected, nil
}

func toKafka(offs []sluice.Offset) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(offs))
	for _, o := range offs {
		topic := o.Topic
		out = append(out, kafka.TopicPartition{Topic: &topic, Partition: o.Partition, Offset: kafka.Offset(o.Next)})
	}
	return out
}
