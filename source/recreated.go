package source

import (
	"maps"
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
// change a consumer gets, and librdkafka writes it before it fetches any
// record of the new topic, so the source asks for the "metadata" debug
// context (configMap), watches the log events for the line (forwardLogs)
// and hands the topic, with its new ID, to the poll loop, which starts
// its owned partitions anew (topicsRecreated).
//
// The line reaches the poll loop on another channel than the records, so
// it may come after records fetched with the new ID. That does no harm
// after a deletion seen by a fetch: librdkafka backs the fetch off
// (fetch.error.backoff.ms) before it fetches the new topic, and the line
// comes meanwhile. It does when the partitions were just started anew
// and the topic was recreated again before librdkafka's metadata showed
// it: the start librdkafka resolves for the seek (ListOffsets, by name)
// is the newest topic's, its fetch with the ID it knows fails, and once
// its metadata shows the newest ID (the line) it fetches the newest topic
// from that start at once. Its records are the ones the restart wanted,
// and starting the partitions anew again at the line would deliver them
// twice, or, while the source stops, drop their final commit. So
// topicsRecreated learns the topic's ID just before it seeks
// (restartedIn): a line whose new ID is that one reports the topic the
// partitions were started in, and is not served for them.

// recreatedMarker is the text between the topic name and the IDs in
// librdkafka's log line of a topic ID change.
const recreatedMarker = " changed id from "

// zeroTopicID is the base64 form of the all-zero topic ID librdkafka
// starts from before its first metadata of a topic: a change from it is
// the topic's first ID, not a recreation.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// recreatedTopic returns the topic a librdkafka log event reports
// recreated (its ID changed from a known one to another), and its new ID
// (base64, as kafka.Uuid.String writes it), if it is one.
func recreatedTopic(ev kafka.LogEvent) (topic, id string, ok bool) {
	if ev.Tag != "METADATA" {
		return "", "", false
	}
	i := strings.Index(ev.Message, recreatedMarker)
	if i < 0 {
		return "", "", false
	}
	j := strings.LastIndex(ev.Message[:i], "Topic ")
	if j < 0 {
		return "", "", false
	}
	topic = ev.Message[j+len("Topic ") : i]
	ids := strings.Fields(ev.Message[i+len(recreatedMarker):])
	if topic == "" || len(ids) != 3 || ids[1] != "to" || ids[0] == zeroTopicID || ids[0] == ids[2] {
		return "", "", false
	}
	return topic, ids[2], true
}

// recreatedTopics hands the topics the log goroutine saw recreated to
// the poll loop, each with the last new ID reported. Safe for concurrent
// use.
type recreatedTopics struct {
	waiting atomic.Bool // some topic is waiting: checked before every poll and event
	mu      sync.Mutex
	topics  map[string]string
}

// add records topic as recreated with the new ID id. Of two reports of a
// topic not taken yet the later one is kept: librdkafka reports its ID
// changes in order.
func (s *recreatedTopics) add(topic, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topics == nil {
		s.topics = make(map[string]string)
	}
	s.topics[topic] = id
	s.waiting.Store(true)
}

// take returns the topics recorded since the last take, each with its
// last new ID, and forgets them.
func (s *recreatedTopics) take() map[string]string {
	if !s.waiting.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.topics)
	clear(s.topics)
	s.waiting.Store(false)
	return out
}

// topicsRecreated starts anew the owned partitions of each topic
// librdkafka reported recreated since the last call, except those started
// anew in the topic of the reported ID already (restartedIn). They are
// lost (rebalance.Core.Lost: their graphs are cancelled, their pending
// offsets dropped, nothing of theirs is committed any more, a commit in
// flight that holds one is waited for), moved to their start in the new
// topic (startRecreated) with a seek, which also drops what librdkafka
// fetched of them before (its version barrier), and given new graphs. It
// runs on the poll goroutine, before every poll, between the events of
// one, at the start of every rebalance callback and before every attempt
// of the final commit. While the source stops, the partitions are only
// lost: they drop out of the final commit (librdkafka commits by topic
// name, so the old topic's offsets would land on the new topic), and
// nothing is started anew.
func (r *runner) topicsRecreated() {
	for topic, id := range r.recreated.take() {
		r.topicRecreated(topic, id)
		if r.k.servedRecreated != nil {
			r.k.servedRecreated(topic, id)
		}
		if r.fatal != nil {
			return
		}
	}
}

// topicRecreated serves one report of topicsRecreated: topic's ID is now
// id.
func (r *runner) topicRecreated(topic, id string) {
	var tps []sluice.TopicPartition
	for _, tp := range r.core.OwnedList() {
		if tp.Topic != topic {
			continue
		}
		if r.restartedIn[tp] == id {
			r.log.Debug("librdkafka reported the topic ID the partition was started anew in; it stays",
				"topic", topic, "partition", tp.Partition, "topic_id", id)
			continue
		}
		tps = append(tps, tp)
		delete(r.highs, tp)
	}
	if len(tps) == 0 {
		return
	}
	if r.core.Closing() {
		r.log.Warn("the topic was deleted and created again while the source stops (librdkafka reported a new topic ID); its partitions are lost: nothing of the old topic is committed onto the new one",
			"topic", topic, "partitions_lost", len(tps))
		r.core.Lost(tps)
		return
	}
	r.log.Warn("the topic was deleted and created again (librdkafka reported a new topic ID); its partitions are lost and consumed anew from the new topic's start",
		"topic", topic, "partitions_lost", len(tps))
	r.core.Lost(tps)
	if r.fatal != nil {
		return
	}
	// Learnt before the seek, so before librdkafka resolves the
	// partitions' start by name: that start is this topic's or a later
	// one's, never an earlier one's.
	now, known := r.describeTopicIDs([]string{topic})[topic]
	r.restartRecreated(tps, now, known)
	r.rerecordTopicID(topic, now, known)
	r.refreshGroupMetadata(topic)
}

// forgetRestarts forgets in which topic ID the partitions of tps were
// started anew (restartedIn): a rebalance gives them up or starts them
// from the group's commit, which may be another topic's.
func (r *runner) forgetRestarts(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		delete(r.restartedIn, tp)
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
// in the new topic and owns them again (new graphs). id, when known, is
// the topic's ID learnt just before: restartedIn records it for tps.
func (r *runner) restartRecreated(tps []sluice.TopicPartition, id string, known bool) {
	for _, tp := range tps {
		if known {
			r.restartedIn[tp] = id
		} else {
			delete(r.restartedIn, tp)
		}
	}
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
