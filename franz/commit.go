package franz

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// Offsets flow: see internal/rebalance, which sends every commit, one at
// a time, through Commit. kgo's auto-commit is off (kgo.DisableAutoCommit),
// and every commit runs under a context bounded by CloseTimeout, so kgo
// gives up on it (it retries retriable errors itself) within that bound.

// Commit commits offs with CommitOffsetsSync, on the core's commit
// goroutine, bounded by CloseTimeout, and returns the partitions the
// broker rejected. It first checks the topics' IDs (replacedTopics): the
// offsets of a topic deleted or recreated since its records were fetched
// are not sent but returned rejected with errTopicReplaced (an expected
// refusal: retried at the next interval until the topic's partitions are
// lost, no error for the final commit), and the topic is handed to the
// poll loop as gone (markReplaced); the offsets of a topic whose ID the
// broker did not tell are returned rejected with why.
func (r *runner) Commit(offs []sluice.Offset) (rejected []rebalance.Rejected, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.cfg.closeTimeout())
	defer cancel()
	replaced, unverified, err := replacedTopics(ctx, r.cl, r.coord.of(r.cl), r.ids.of(offsetTopics(offs)))
	if err != nil {
		return nil, err
	}
	r.markReplaced(replaced)
	m := make(map[string]map[int32]kgo.EpochOffset)
	var send []sluice.Offset
	for _, o := range offs {
		if slices.Contains(replaced, o.Topic) {
			rejected = append(rejected, rebalance.Rejected{Offset: o, Err: errTopicReplaced})
			continue
		}
		if uerr := unverified[o.Topic]; uerr != nil {
			rejected = append(rejected, rebalance.Rejected{Offset: o, Err: uerr})
			continue
		}
		if m[o.Topic] == nil {
			m[o.Topic] = make(map[int32]kgo.EpochOffset)
		}
		m[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Next}
		send = append(send, o)
	}
	if len(send) == 0 {
		return rejected, nil
	}
	r.cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		var more []rebalance.Rejected
		more, err = rejections(send, resp, cerr)
		rejected = append(rejected, more...)
	})
	if err != nil {
		return nil, err
	}
	return rejected, nil
}

// rejections returns the offsets of offs the response rejected, or the
// request's error.
func rejections(offs []sluice.Offset, resp *kmsg.OffsetCommitResponse, err error) ([]rebalance.Rejected, error) {
	if err != nil || resp == nil {
		return nil, err
	}
	var out []rebalance.Rejected
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			perr := kerr.ErrorForCode(p.ErrorCode)
			if perr == nil {
				continue
			}
			tp := sluice.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			for _, o := range offs {
				if o.TopicPartition == tp {
					out = append(out, rebalance.Rejected{Offset: o, Err: perr})
				}
			}
		}
	}
	return out, nil
}

// ExpectedCommitError reports whether err is a commit rejection expected
// around rebalances (the group moved on or is rebalancing) or around a
// topic's deletion: UNKNOWN_TOPIC_ID, the broker no longer knows the topic
// ID the client commits under (UNKNOWN_TOPIC_OR_PARTITION where offsets
// go by name, before Kafka 4.0), or Commit found so itself before sending
// (errTopicReplaced wraps it). Such offsets are the deleted topic's and
// mean nothing for a topic recreated under its name; the source loses the
// topic's partitions once kgo reports the ID unknown or Commit found the
// topic replaced (topicsGone).
func (r *runner) ExpectedCommitError(err error) bool {
	return refusedOffsets(err)
}

// refusedOffsets reports whether err holds a refusal of offsets that
// commits nothing and needs no retry: the membership moved on
// (groupMovedError) or the topic was deleted (topicGoneErr:
// UNKNOWN_TOPIC_ID, also wrapped by errTopicReplaced, or
// UNKNOWN_TOPIC_OR_PARTITION).
func refusedOffsets(err error) bool {
	return groupMovedError(err) || topicGoneErr(err)
}

// groupMovedError reports whether err holds a group coordinator's
// refusal of a commit because the member's membership moved on (another
// member owns the partition now) or the group is rebalancing: the errors
// of an OffsetCommit or TxnOffsetCommit a rebalance can cause.
func groupMovedError(err error) bool {
	for _, e := range []error{kerr.RebalanceInProgress, kerr.IllegalGeneration, kerr.UnknownMemberID,
		kerr.StaleMemberEpoch, kerr.FencedInstanceID, kerr.FencedMemberEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// RetriableCommitError reports whether a final commit rejected with err
// may succeed once the rebalance in progress completes
// (REBALANCE_IN_PROGRESS). ILLEGAL_GENERATION is not: kgo holds commits
// while a join and sync are in flight and retries STALE_MEMBER_EPOCH
// itself, so that answer means the member was fenced, and retrying it
// would only stretch the shutdown to its deadline.
func (r *runner) RetriableCommitError(err error) bool {
	return errors.Is(err, kerr.RebalanceInProgress)
}
