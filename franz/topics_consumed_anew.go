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
// A fetch sent before the purge is answered within the client's fetch max
// wait plus its request timeout overhead (the deadline kgo sets on it),
// and the first poll after the purge returns what was buffered: a report
// of the topic gone is believed again once that much time has passed
// since the first poll after the purge. A real deletion in the meantime
// is not missed, only handled later: kgo reports a topic gone on every
// fetch once it persists.
//
// Poll goroutine only.
type consumedAnew struct {
	grace time.Duration
	// until maps each topic consumed anew to the end of its grace; zero
	// until the first poll after it was consumed anew.
	until map[string]time.Time
}

// newConsumedAnew returns a tracker whose grace is cl's fetch max wait
// plus its request timeout overhead.
func newConsumedAnew(cl *kgo.Client) consumedAnew {
	wait, _ := cl.OptValue(kgo.FetchMaxWait).(time.Duration)
	overhead, _ := cl.OptValue(kgo.RequestTimeoutOverhead).(time.Duration)
	return consumedAnew{grace: wait + overhead}
}

// consumed records that topic was just consumed anew.
func (c *consumedAnew) consumed(topic string) {
	if c.until == nil {
		c.until = make(map[string]time.Time)
	}
	c.until[topic] = time.Time{}
}

// polling is called as a poll starts, at now: the grace of each topic
// consumed anew since the previous poll starts, and those of the topics
// whose grace ended are forgotten.
func (c *consumedAnew) polling(now time.Time) {
	for topic, end := range c.until {
		switch {
		case end.IsZero():
			c.until[topic] = now.Add(c.grace)
		case !now.Before(end):
			delete(c.until, topic)
		}
	}
}

// stale reports whether a report, at now, that the broker no longer knows
// topic's ID may come from a fetch sent before topic was consumed anew.
func (c *consumedAnew) stale(topic string, now time.Time) bool {
	end, ok := c.until[topic]
	return ok && (end.IsZero() || now.Before(end))
}
