package integration

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFranzExactlyOnceRewindFindsTopicGone: the group refuses one of
// member A's transactions' offsets mid-stream with UNKNOWN_TOPIC_ID (the
// topic was deleted), and the rewind that follows the abort reads the
// committed offsets with the same answer, as it does on Apache Kafka
// while the client still holds a deleted topic's ID. A's Run goes on: the
// topic's partitions are lost (no graph, nothing committed) and consumed
// anew from the group's committed offsets, so a read_committed reader
// sees every input's two outputs exactly once and the commits reach the
// high watermarks.
func TestFranzExactlyOnceRewindFindsTopicGone(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), "feosg", parts, perPartition)

	commits := newCommitRecovery()
	a := e.start(t, franzTxn, "A", "feosg-A", 2, pipeline.WithHooks(commits))
	e.waitInputCommitted(t)
	rewindRead := answerTopicGone(e.b, e.group)
	refused := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.TxnOffsetCommit}, Group: e.group, Err: kerr.UnknownTopicID})
	defer refused.Remove()
	e.b.Fill(t, e.in, perPartition, 16) // mid-stream: the next transaction's offsets are refused
	hw := e.hw(t)
	select {
	case <-commits.Recovered():
	case <-a.Done():
		t.Fatalf("A stopped after its refused commit (%v): %v; want the partitions lost and consumed anew", commits.Failed(), a.Err())
	case <-time.After(wait):
		t.Fatalf("A committed nothing within %v of its refused commit (%v)", wait, commits.Failed())
	}
	if err := commits.Failed(); !errors.Is(err, kerr.UnknownTopicID) {
		t.Fatalf("the failed commit = %v, want an error wrapping %v", err, kerr.UnknownTopicID)
	}
	if rewindRead.Load() == 0 {
		t.Fatal("the rewind's read of the committed offsets was not answered UNKNOWN_TOPIC_ID")
	}
	e.finish(t, hw, a)
}

// answerTopicGone makes b answer every stable OffsetFetch of group sent
// outside the membership (kgo's own reads name the member; the rewind's
// does not) with UNKNOWN_TOPIC_ID on each partition, as Kafka answers
// for the ID of a deleted topic, and returns the count of those answers.
func answerTopicGone(b *kafkatest.Broker, group string) *atomic.Int64 {
	var n atomic.Int64
	b.Cluster().ControlKey(int16(kmsg.OffsetFetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := r.(*kmsg.OffsetFetchRequest)
		if !req.RequireStable || len(req.Groups) != 1 || req.Groups[0].Group != group || req.Groups[0].MemberID != nil {
			return nil, nil, false
		}
		n.Add(1)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version = req.Version
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = group
		for _, t := range req.Groups[0].Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
		return resp, nil, true
	})
	return &n
}
