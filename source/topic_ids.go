package source

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"

	"github.com/sluice-go/sluice/internal/librdkafka"
)

// Under KIP-848's consumer group protocol the broker assigns partitions by
// topic ID: a topic deleted and created again under the same name is
// revoked (the old ID) and assigned again (the new one). librdkafka's
// rebalance callback names only the topic, and its commits go by name, so
// a revoke of the old topic served as a revoke would commit the old
// topic's offsets onto the new one and skip the new topic's first records.
// The log line that reports the recreation (see recreated.go) is read on
// another goroutine and may come after the revoke. So under KIP-848 the
// source records the topic ID of each topic when its partitions are
// assigned and checks it again when they are revoked: a revoke of a topic
// whose ID changed, which no longer exists, or whose ID cannot be learned
// now, is served as a loss (nothing committed: duplicates at worst, never
// a skip). Each check is one DescribeTopics request, bounded by
// topicIDTimeout. With the classic protocols nothing is recorded or
// checked.

// topicIDTimeout bounds one DescribeTopics request of the check; the
// commit timeout bounds it too when it is shorter.
const topicIDTimeout = 5 * time.Second

// topicIDs maps each topic of the assignment to the topic ID it had when
// its partitions were assigned, as far as it could be learned. Used on the
// poll goroutine only (rebalance callbacks, topicsRecreated).
type topicIDs map[string]string

// checksTopicIDs reports whether revokes are checked against topic IDs
// (KIP-848's consumer group protocol).
func (r *runner) checksTopicIDs() bool { return r.k.cfg.consumerProtocol() }

// describeTopicIDs asks the current topic IDs of topics; a topic that does
// not exist, or whose ID could not be learned (an error, the timeout), is
// absent from the answer.
func (r *runner) describeTopicIDs(topics []string) map[string]string {
	return r.describeTopicIDsBy(topics, time.Now().Add(min(topicIDTimeout, r.k.cfg.commitTimeout())))
}

// describeTopicIDsBy is describeTopicIDs with the request bounded by
// deadline instead.
func (r *runner) describeTopicIDsBy(topics []string, deadline time.Time) map[string]string {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ids, err := librdkafka.TopicIDs(ctx, func() (*kafka.AdminClient, error) { return kafka.NewAdminClientFromConsumer(r.c) }, topics)
	if err != nil {
		r.log.Debug("topic IDs could not be learned", "topics", topics, "err", err)
		return nil
	}
	return ids
}

// recordTopicIDs records the topic ID of each topic of tps not recorded
// yet (a topic newly assigned). A topic whose ID cannot be learned is not
// recorded: its revoke is then served as a revoke, unchecked.
func (r *runner) recordTopicIDs(tps []sluice.TopicPartition) {
	if !r.checksTopicIDs() {
		return
	}
	topics := topicsOf(tps, func(t string) bool { _, ok := r.topicIDs[t]; return !ok })
	if len(topics) == 0 {
		return
	}
	for t, id := range r.describeTopicIDs(topics) {
		if slices.Contains(topics, t) {
			r.topicIDs[t] = id
		}
	}
}

// rerecordTopicID records id, topic's current ID if known, replacing the
// one recorded: its owned partitions were started anew in the new topic
// (see topicsRecreated), so a later revoke of them is the new topic's.
func (r *runner) rerecordTopicID(topic, id string, known bool) {
	if !r.checksTopicIDs() {
		return
	}
	delete(r.topicIDs, topic)
	if known {
		r.topicIDs[topic] = id
	}
}

// splitRevoked splits the revoked tps into those served as a revoke and
// those served as a loss: a partition whose topic had an ID recorded at
// assignment and now has none (deleted, or not learned in time) or
// another one is lost. While the source stops, a revoke commits the final
// offsets of every partition still owned (rebalance.Core.Revoked), so the
// owned partitions of a changed topic are returned as lost too. Without
// KIP-848, or without any recorded ID among the topics checked, every
// partition is revoked and nothing is asked.
func (r *runner) splitRevoked(tps []sluice.TopicPartition) (revoked, lost []sluice.TopicPartition) {
	if !r.checksTopicIDs() {
		return tps, nil
	}
	checked := tps
	if r.core.Closing() {
		checked = append(slices.Clone(tps), r.core.OwnedList()...)
	}
	changed := r.changedTopics(checked, time.Now().Add(min(topicIDTimeout, r.k.cfg.commitTimeout())))
	if len(changed) == 0 {
		return tps, nil
	}
	lost = ofTopics(tps, changed)
	for _, tp := range tps {
		if !slices.Contains(lost, tp) {
			revoked = append(revoked, tp)
		}
	}
	if r.core.Closing() {
		for _, tp := range ofTopics(r.core.OwnedList(), changed) {
			if !slices.Contains(lost, tp) {
				lost = append(lost, tp)
			}
		}
	}
	r.logChanged(changed, lost)
	return revoked, lost
}

// loseChangedTopics serves as lost the owned partitions of every topic
// whose ID changed since it was assigned, or which no longer exists
// (under KIP-848 only). It runs before every attempt of the final commit,
// which commits by name, so that no attempt carries an old topic's offset
// onto a new topic of the same name, whether or not librdkafka's log line
// of the recreation was read yet.
func (r *runner) loseChangedTopics(deadline time.Time) {
	if !r.checksTopicIDs() || len(r.topicIDs) == 0 {
		return
	}
	owned := r.core.OwnedList()
	changed := r.changedTopics(owned, deadline)
	if len(changed) == 0 {
		return
	}
	lost := ofTopics(owned, changed)
	r.logChanged(changed, lost)
	r.core.Lost(lost)
	r.forgetTopicIDs()
}

// changedTopics asks the current IDs of the topics of tps that have one
// recorded, by deadline, and returns those whose ID changed or could not
// be learned, with the reason.
func (r *runner) changedTopics(tps []sluice.TopicPartition, deadline time.Time) map[string]string {
	topics := topicsOf(tps, func(t string) bool { _, ok := r.topicIDs[t]; return ok })
	if len(topics) == 0 {
		return nil
	}
	now := r.describeTopicIDsBy(topics, deadline)
	why := make(map[string]string)
	for _, t := range topics {
		switch id, ok := now[t]; {
		case !ok:
			why[t] = "the topic does not exist or its topic ID could not be learned"
		case id != r.topicIDs[t]:
			why[t] = fmt.Sprintf("the topic ID changed from %s to %s (the topic was deleted and created again)", r.topicIDs[t], id)
		}
	}
	return why
}

// topicsOf returns the distinct topics of tps for which keep is true, in
// the order of their first partition.
func topicsOf(tps []sluice.TopicPartition, keep func(topic string) bool) []string {
	var topics []string
	for _, tp := range tps {
		if keep(tp.Topic) && !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	return topics
}

// ofTopics returns the partitions of tps whose topic is a key of topics.
func ofTopics(tps []sluice.TopicPartition, topics map[string]string) []sluice.TopicPartition {
	var of []sluice.TopicPartition
	for _, tp := range tps {
		if _, ok := topics[tp.Topic]; ok {
			of = append(of, tp)
		}
	}
	return of
}

// logChanged logs, per changed topic, its partitions of lost.
func (r *runner) logChanged(changed map[string]string, lost []sluice.TopicPartition) {
	for t, reason := range changed {
		var parts []int32
		for _, tp := range lost {
			if tp.Topic == t {
				parts = append(parts, tp.Partition)
			}
		}
		r.log.Warn("partitions served as lost, nothing of them committed: "+reason,
			"topic", t, "partitions", parts)
	}
}

// forgetTopicIDs forgets the recorded IDs of topics of which no partition
// is owned any more.
func (r *runner) forgetTopicIDs() {
	if len(r.topicIDs) == 0 {
		return
	}
	owned := make(map[string]bool)
	for _, tp := range r.core.OwnedList() {
		owned[tp.Topic] = true
	}
	for t := range r.topicIDs {
		if !owned[t] {
			delete(r.topicIDs, t)
		}
	}
}
