package franz

import (
	"errors"

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

// topicGoneCode reports whether a partition's error code in an answer
// about a topic says the broker does not know the topic (by the ID or the
// name the client sent): it was deleted, and maybe recreated.
func topicGoneCode(code int16) bool {
	return code == kerr.UnknownTopicID.Code || code == kerr.UnknownTopicOrPartition.Code
}

// resubscribe purges topic from cl and adds it back: kgo never adopts a
// recreated topic's new ID by itself, and fails the topic with
// UNKNOWN_TOPIC_ID until it is purged. A group client rebalances.
func resubscribe(cl *kgo.Client, topic string) {
	cl.PurgeTopicsFromClient(topic)
	cl.AddConsumeTopics(topic)
}
