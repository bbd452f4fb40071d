package franz

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumedAnew tells a share client's stale report of a topic gone from a
// new one. When a topic is consumed anew (resubscribe), a ShareFetch the
// client sent before, under the topic's old ID, may still answer
// UNKNOWN_TOPIC_ID, or wait answered in the client's buffer; kgo's share
// fetch reports carry the topic's name only, so that answer looks like a
// new deletion. Acting on it would purge the topic a second time, while a
// fetch under the new ID may already have delivered records of the
// recreated topic: their acknowledgements would then be refused (kgo
// drops a purged topic's acknowledgements) and the records redelivered.
//
// kgo gives a share fetch at most its max wait plus 5 seconds, connecting
// to the broker included, and buffers the answer for the next poll, which
// returns what every broker answered. So a fetch sent before the topic
// was consumed anew has answered, or been given up, within the grace
// (the fetch max wait, shareFetchBound, and a second for kgo to handle
// the answer) after the topic was consumed anew, and a
// report of the topic gone is stale up to and including the first poll
// that starts after the grace: that poll returns anything answered
// before. A real deletion in the meantime is not missed, only handled
// later: kgo reports a topic gone on every fetch once it persists.
//
// Poll goroutine only.
type consumedAnew struct {
	grace time.Duration
	// anew maps each topic consumed anew to the end of its grace.
	anew map[string]*anewTopic
}

// anewTopic is a topic consumed anew: when its grace ends, and whether
// the poll that returns the last of its stale reports has started.
type anewTopic struct {
	end  time.Time
	last bool
}

// shareFetchBound is how long kgo lets a share fetch take beyond its max
// wait (consumer_share.go: MaxWait + 5s).
const shareFetchBound = 5 * time.Second

// newConsumedAnew returns a tracker whose grace is cl's fetch max wait,
// plus shareFetchBound, plus a second for kgo to handle the answer.
func newConsumedAnew(cl *kgo.Client) consumedAnew {
	wait, _ := cl.OptValue(kgo.FetchMaxWait).(time.Duration)
	return consumedAnew{grace: wait + shareFetchBound + time.Second}
}

// consumed records that topic was consumed anew at now: once its purge
// from the client returned, after which no fetch names its old ID.
func (c *consumedAnew) consumed(topic string, now time.Time) {
	if c.anew == nil {
		c.anew = make(map[string]*anewTopic)
	}
	c.anew[topic] = &anewTopic{end: now.Add(c.grace)}
}

// polling is called as a poll starts, at now. A topic whose last poll
// (the first to start after its grace) has been handled is forgotten;
// this poll is the last of those whose grace ended.
func (c *consumedAnew) polling(now time.Time) {
	for topic, a := range c.anew {
		switch {
		case a.last:
			delete(c.anew, topic)
		case !now.Before(a.end):
			a.last = true
		}
	}
}

// stale reports whether a report that the broker no longer knows topic's
// ID may come from a fetch sent before topic was consumed anew.
func (c *consumedAnew) stale(topic string) bool {
	_, ok := c.anew[topic]
	return ok
}
