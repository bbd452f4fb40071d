package franz

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
)

// Before every commit the source checks that each topic of the offsets
// still has the topic ID its records were fetched under. Kafka before 4.0
// (OffsetCommit below v10, TxnOffsetCommit below v6) takes offsets by
// topic name: the offset of a record of a topic deleted, and recreated
// under the same name, while the record was in flight would land on the
// new topic, whose records before it would never be delivered. kgo notices
// the deletion only at its next metadata refresh (seconds later), so the
// source asks the broker itself: one Metadata request for just the
// committed topics per commit (an interval, a revoke, the final commit, a
// transaction), whatever the protocol version, which also spares newer
// brokers a commit they would refuse (UNKNOWN_TOPIC_ID).
//
// The check goes to the group's coordinator (groupCoordinator), the broker
// the commit itself goes to, not to any broker: kgo sends a Metadata
// request to the next broker of its rotation, on the connection of that
// broker that also carries the metadata loop's requests, and a broker
// answers the requests of one connection in order. While a broker is slow
// to answer the metadata loop (a purge of a deleted topic from the client
// waits for that answer), a check sent there would wait behind it until
// the commit's timeout, and an exactly-once commit would abort, its
// records processed again, each time the rotation lands there. On the
// coordinator's connection the check waits only where the commit, and the
// group's heartbeats, would wait anyway.

// errTopicReplaced is the reason the offsets of a topic are not committed:
// the broker no longer knows the topic ID their records were fetched
// under (the topic was deleted, and maybe recreated under its name with a
// new ID). It wraps kerr.UnknownTopicID, the refusal Kafka 4.0 and later
// answer such a commit with, so the source handles both alike
// (refusedOffsets).
var errTopicReplaced = fmt.Errorf("franz: the topic was deleted (and maybe recreated) since its records were fetched: %w", kerr.UnknownTopicID)

// fetchedIDs are the topic IDs the runner's records were fetched under
// (kgo.FetchTopic.TopicID), by topic: kgo keeps the ID it first saw for a
// topic until the topic is purged from the client (consumeAnew), which
// starts only after the topic's partitions were lost (topicsGone), so
// every offset the core holds for a topic belongs to a record fetched
// under the ID recorded here. The poll goroutine records (saw); the
// commit goroutine reads (of).
type fetchedIDs struct {
	mu  sync.Mutex // guards writes to ids, and reads off the poll goroutine
	ids map[string][16]byte
}

// saw records the ID topic's records were fetched under; a zero ID (a
// fetch below v13, which names topics by name) is not recorded. Only the
// poll goroutine calls it: it reads ids without the lock, and takes it
// only to write a change.
func (f *fetchedIDs) saw(topic string, id [16]byte) {
	if id == ([16]byte{}) || f.ids[topic] == id {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = make(map[string][16]byte)
	}
	f.ids[topic] = id
}

// of returns the recorded IDs of topics (a topic without one is absent).
func (f *fetchedIDs) of(topics []string) map[string][16]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][16]byte, len(topics))
	for _, t := range topics {
		if id, ok := f.ids[t]; ok {
			out[t] = id
		}
	}
	return out
}

// groupCoordinator is a kgo.HookBrokerWrite recording the broker the
// client last wrote a request of its group to (a heartbeat, a join, a
// sync, an offset fetch or commit): the group's coordinator, where
// replacedTopics sends its check. kgo tells no other way which broker it
// found the coordinator on, and asking (FindCoordinator) goes to any
// broker, as a Metadata request would. A coordinator that moved since is
// still a broker: it answers the check as any broker would.
type groupCoordinator struct {
	node  atomic.Int32
	known atomic.Bool
}

var _ kgo.HookBrokerWrite = (*groupCoordinator)(nil)

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (c *groupCoordinator) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch kmsg.Key(key) {
	case kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.SyncGroup,
		kmsg.TxnOffsetCommit, kmsg.ConsumerGroupHeartbeat:
		c.node.Store(meta.NodeID)
		c.known.Store(true)
	}
}

// of returns the broker of cl the client last wrote a group request to,
// or nil before any.
func (c *groupCoordinator) of(cl *kgo.Client) *kgo.Broker {
	if c == nil || !c.known.Load() {
		return nil
	}
	return cl.Broker(int(c.node.Load()))
}

// replacedTopics asks the broker (one Metadata request, for just the
// topics of fetched, to coord, the group's coordinator, or through cl to
// any broker when coord is nil or the request to it fails other than by
// ctx's end) for the current ID of each topic of
// fetched, which maps a topic to the ID its records were fetched under,
// and returns the topics the broker knows under another ID. unverified
// maps a topic whose ID the answer does not tell (a topic error, such as
// UNKNOWN_TOPIC_OR_PARTITION for a deleted topic or from a broker whose
// metadata lags, or no answer for it) to why; its offsets must not be
// committed either. A
// broker answering without topic IDs (Metadata below v10) verifies
// nothing and replaces nothing. err is the request's error.
func replacedTopics(ctx context.Context, cl *kgo.Client, coord *kgo.Broker, fetched map[string][16]byte) (replaced []string, unverified map[string]error, err error) {
	if len(fetched) == 0 {
		return nil, nil, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for topic := range fetched {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := metadataOf(ctx, cl, coord, req)
	if err != nil {
		return nil, nil, fmt.Errorf("checking the topic IDs of the offsets (Metadata): %w", err)
	}
	answered := make(map[string]bool, len(fetched))
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		topic := *rt.Topic
		want, ok := fetched[topic]
		if !ok || answered[topic] {
			continue
		}
		answered[topic] = true
		terr := kerr.ErrorForCode(rt.ErrorCode)
		switch {
		case rt.ErrorCode == kerr.UnknownTopicOrPartition.Code:
			// Not proof of a replacement: a broker whose metadata lags
			// answers so for a topic it does not know yet. The offsets
			// wait for the next commit (an expected refusal); a deleted
			// topic is then found by kgo (UNKNOWN_TOPIC_ID) or by a
			// later check's new ID.
			unverified = addErr(unverified, topic, fmt.Errorf("checking the topic ID of %s (Metadata): %w", topic, terr))
		case rt.TopicID != ([16]byte{}) && rt.TopicID != want:
			replaced = append(replaced, topic)
		case rt.TopicID == ([16]byte{}) && terr != nil:
			unverified = addErr(unverified, topic, fmt.Errorf("checking the topic ID of %s (Metadata): %w", topic, terr))
		}
	}
	for topic := range fetched {
		if !answered[topic] {
			unverified = addErr(unverified, topic, fmt.Errorf("checking the topic ID of %s: the Metadata answer left it out", topic))
		}
	}
	slices.Sort(replaced)
	return replaced, unverified, nil
}

// metadataOf sends req to coord, or through cl to any broker when coord
// is nil or the request to coord failed other than by ctx's end (the
// broker is gone, or unreachable).
func metadataOf(ctx context.Context, cl *kgo.Client, coord *kgo.Broker, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, error) {
	if coord != nil {
		kresp, err := coord.Request(ctx, req)
		if err == nil {
			return kresp.(*kmsg.MetadataResponse), nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return req.RequestWith(ctx, cl)
}

func addErr(m map[string]error, topic string, err error) map[string]error {
	if m == nil {
		m = make(map[string]error)
	}
	m[topic] = err
	return m
}

// offsetTopics returns the distinct topics of offs.
func offsetTopics(offs []sluice.Offset) []string {
	topics, _ := byTopic(offs, func(o sluice.Offset) string { return o.Topic })
	return topics
}

// markReplaced hands topics, found replaced by a commit, to the poll loop
// as gone (takeReplaced), waking its poll: their partitions are lost and
// the topics consumed anew (topicsGone). Any goroutine may call it.
func (r *runner) markReplaced(topics []string) {
	if len(topics) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaced = append(r.replaced, topics...)
	if r.cancelPoll != nil {
		r.cancelPoll()
	}
}

// takeReplaced marks gone the topics markReplaced handed over, on the
// poll goroutine.
func (r *runner) takeReplaced() {
	r.mu.Lock()
	topics := r.replaced
	r.replaced = nil
	r.mu.Unlock()
	for _, t := range topics {
		r.gone.add(t)
	}
}
