package source

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

// A topic deleted and created again under the same name is a new topic
// (a new topic ID, offsets from 0), but librdkafka (v2.11.1) keeps the
// partition's fetch position across it: when its metadata shows the new
// ID it only adopts it and logs so (rd_kafka_topic_metadata_update,
// rdkafka_topic.c: "Topic %s changed id from %s to %s", debug context
// "metadata"), then fetches the new topic from the old position after
// its fetch error backoff. That log line is the only report of the
// change a consumer gets, and it comes before any record of the new
// topic is fetched, so the source asks for the "metadata" debug context
// (configMap), watches the log events for the line (forwardLogs) and
// hands the topic to the poll loop, which starts its owned partitions
// anew (topicsRecreated).

// recreatedMarker is the text between the topic name and the IDs in
// librdkafka's log line of a topic ID change.
const recreatedMarker = " changed id from "

// zeroTopicID is the base64 form of the all-zero topic ID librdkafka
// starts from before its first metadata of a topic: a change from it is
// the topic's first ID, not a recreation.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// recreatedTopic returns the topic a librdkafka log event reports
// recreated (its ID changed from a known one to another), if it is one.
func recreatedTopic(ev kafka.LogEvent) (string, bool) {
	if ev.Tag != "METADATA" {
		return "", false
	}
	i := strings.Index(ev.Message, recreatedMarker)
	if i < 0 {
		return "", false
	}
	j := strings.LastIndex(ev.Message[:i], "Topic ")
	if j < 0 {
		return "", false
	}
	topic := ev.Message[j+len("Topic ") : i]
	ids := strings.Fields(ev.Message[i+len(recreatedMarker):])
	if topic == "" || len(ids) != 3 || ids[1] != "to" || ids[0] == zeroTopicID || ids[0] == ids[2] {
		return "", false
	}
	return topic, true
}

// recreatedTopics hands the topics the log goroutine saw recreated to
// the poll loop. Safe for concurrent use.
type recreatedTopics struct {
	waiting atomic.Bool // some topic is waiting: checked before every poll and event
	mu      sync.Mutex
	topics  map[string]bool
}

// add records topic as recreated.
func (s *recreatedTopics) add(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topics == nil {
		s.topics = make(map[string]bool)
	}
	s.topics[topic] = true
	s.waiting.Store(true)
}

// take returns the topics recorded since the last take and forgets them.
func (s *recreatedTopics) take() []string {
	if !s.waiting.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.topics))
	for t := range s.topics {
		out = append(out, t)
	}
	clear(s.topics)
	s.waiting.Store(false)
	return out
}

// topicsRecreated starts anew the owned partitions of each topic
// librdkafka reported recreated since the last call. They are lost
// (rebalance.Core.Lost: their graphs are cancelled, their pending offsets
// dropped, nothing of theirs is committed any more, a commit in flight
// that holds one is waited for), moved to their start in the new topic
// (startRecreated) with a seek, which also drops what librdkafka fetched
// of them before (its version barrier), and given new graphs. It runs on
// the poll goroutine, before every poll, between the events of one, at
// the start of every rebalance callback and before every attempt of the
// final commit. While the source stops, the partitions are only lost:
// they drop out of the final commit (librdkafka commits by topic name, so
// the old topic's offsets would land on the new topic), and nothing is
// started anew.
func (r *runner) topicsRecreated() {
	for _, topic := range r.recreated.take() {
		var tps []sluice.TopicPartition
		for _, tp := range r.core.OwnedList() {
			if tp.Topic == topic {
				tps = append(tps, tp)
				delete(r.highs, tp)
			}
		}
		if len(tps) == 0 {
			continue
		}
		if r.core.Closing() {
			r.log.Warn("the topic was deleted and created again while the source stops (librdkafka reported a new topic ID); its partitions are lost: nothing of the old topic is committed onto the new one",
				"topic", topic, "partitions_lost", len(tps))
			r.core.Lost(tps)
			continue
		}
		r.log.Warn("the topic was deleted and created again (librdkafka reported a new topic ID); its partitions are lost and consumed anew from the new topic's start",
			"topic", topic, "partitions_lost", len(tps))
		r.core.Lost(tps)
		if r.fatal != nil {
			return
		}
		r.restartRecreated(tps)
		r.rerecordTopicID(topic)
		r.refreshGroupMetadata(topic)
	}
}

// refreshGroupMetadata asks librdkafka for the metadata of every topic:
// an answer for all topics is what makes its group compare the
// subscription's partition counts and rejoin when they changed (a topic
// recreated with more partitions), which the refresh after the failed
// fetch, for one topic, does not.
func (r *runner) refreshGroupMetadata(topic string) {
	if _, err := r.c.GetMetadata(nil, true, 5000); err != nil {
		r.log.Warn("metadata refresh after a topic's recreation failed; new partitions are consumed after the next periodic refresh",
			"topic", topic, "err", err)
	}
}

// restartRecreated seeks tps, given up by topicsRecreated, to their start
// in the new topic and owns them again (new graphs).
func (r *runner) restartRecreated(tps []sluice.TopicPartition) {
	parts := kafkaTPs(tps)
	start, err := r.core.Claim(tps)
	if err != nil {
		r.fatal = err
		return
	}
	r.startRecreated(parts, start)
	res, err := r.c.SeekPartitions(parts)
	if err != nil {
		r.log.Warn("seek of a recreated topic's partitions failed", "partitions", tps, "err", err)
	}
	for _, p := range res {
		if p.Error != nil {
			r.log.Warn("seek of a recreated topic's partition failed", "topic", topicOf(p), "partition", p.Partition, "err", p.Error)
		}
	}
	r.core.Assigned(tps, "recreated", true)
	r.resumeLeftPaused(tps)
}

// startRecreated sets the offset of each partition of parts: the offset
// store's claim (start) when there is a store, else OffsetInvalid, which
// librdkafka's seek resolves with auto.offset.reset as for a new
// assignment. The group's committed offset is not read: the partitions
// were this consumer's until the recreation was seen, so nothing of the
// new topic was committed by anyone, and an offset found there is the old
// topic's, committed by name in the moments before (librdkafka commits
// by topic name); starting from it would skip the new topic's first
// records. That offset stays the group's until the source commits the
// new topic's first processed record (a crash before then starts the next
// owner there).
func (r *runner) startRecreated(parts []kafka.TopicPartition, start map[sluice.TopicPartition]int64) {
	for i := range parts {
		parts[i].Offset, parts[i].LeaderEpoch = kafka.OffsetInvalid, nil
	}
	if r.k.cfg.OffsetStore != nil {
		startAt(parts, start)
	}
}

// withMetadataDebug returns librdkafka's debug property with the
// "metadata" context added (see recreatedMarker), and whether the caller
// had asked for debug logs itself.
func withMetadataDebug(debug any) (string, bool) {
	s, _ := debug.(string)
	if s == "" {
		return "metadata", false
	}
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c == "metadata" || c == "all" {
			return s, true
		}
	}
	return s + ",metadata", true
}
