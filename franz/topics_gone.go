package franz

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// goneTopics are the topics whose topic ID the broker stopped knowing in
// the last poll: deleted, or deleted and recreated under the same name.
// Both runners collect them from the poll's fetch errors and handle them
// once the poll is handled (topicsGone).
type goneTopics map[string]bool

// mark records topic as gone when err is UNKNOWN_TOPIC_ID (kgo reports it
// only once it persists, the topic having been deleted) and reports
// whether it did.
func (g *goneTopics) mark(topic string, err error) bool {
	if !errors.Is(err, kerr.UnknownTopicID) {
		return false
	}
	g.add(topic)
	return true
}

// add records topic as gone.
func (g *goneTopics) add(topic string) {
	if *g == nil {
		*g = make(goneTopics)
	}
	(*g)[topic] = true
}

// next removes one topic (the first by name) and returns it; false when
// none is left. Handling the topics one at a time, each removed before it
// is handled, keeps a topic marked while another is handled (losing
// partitions may abort an exactly-once transaction, whose rewind marks
// the topics it finds gone) for a later turn of the same loop.
func (g goneTopics) next() (string, bool) {
	if len(g) == 0 {
		return "", false
	}
	topic := slices.Min(slices.Collect(maps.Keys(g)))
	delete(g, topic)
	return topic, true
}

// topicGoneErr reports whether err says the broker, or kgo's metadata,
// does not know a topic (by the ID or the name the client sent).
func topicGoneErr(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
}

// topicGoneCode reports whether a partition's error code in an answer
// about a topic says the broker does not know the topic (by the ID or the
// name the client sent): it was deleted, and maybe recreated.
func topicGoneCode(code int16) bool {
	return code == kerr.UnknownTopicID.Code || code == kerr.UnknownTopicOrPartition.Code
}

// resubscribe purges topic from cl and adds it back: kgo never adopts a
// recreated topic's new ID by itself, and fails the topic with
// UNKNOWN_TOPIC_ID until it is purged. The share source uses it; the
// group source's purge is consumeAnew (group_purge.go).
func resubscribe(cl *kgo.Client, topic string) {
	cl.PurgeTopicsFromClient(topic)
	cl.AddConsumeTopics(topic)
}
