package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// As TestFranzExactlyOnceRewindFindsTopicGone, but the rewind's read of
// the committed offsets answers UNKNOWN_TOPIC_OR_PARTITION for partition
// 1 only, every time (a transient answer for a topic that was never
// deleted; the others are answered normally): A's Run goes on, and every
// input is output exactly once (read_committed) with the commits reaching
// the high watermarks.
func TestFranzExactlyOnceRewindFindsOnePartitionGone(t *testing.T) {
	t.Parallel()
	testRewindGoneVariant(t, "feosg1", franzTxn, []int32{1}, kerr.UnknownTopicOrPartition, nil)
}

// As TestFranzExactlyOnceRewindFindsTopicGone in a KIP-848 group: the
// topic's partitions are lost, purged and subscribed again, and the group
// (consumer protocol) must assign them anew.
func TestFranzExactlyOnceRewindFindsTopicGone848(t *testing.T) {
	t.Parallel()
	franz848Txn := txnClient{"franz848", func(t *testing.T, b *kafkatest.Broker, group, in, txnID string) (sluice.Source, produceTo) {
		src := newFranzSource(t, b, group, in, franz848()...)
		p := newFranzTxnProducer(t, src, txnID, 20*time.Second)
		return src, func(topic string) func(pipeline.Stream[sluice.Message]) pipeline.End { return franzProduce(p, topic) }
	}}
	testRewindGoneVariant(t, "feosg848", franz848Txn, []int32{0, 1, 2, 3}, kerr.UnknownTopicID, func(e *eosCase) {
		if got := groupType(t, e.b, e.group); got != "consumer" {
			t.Fatalf("group type %q, want consumer (KIP-848)", got)
		}
	})
}

// testRewindGoneVariant runs member A of case name on client c, refuses a
// transaction's offsets mid-stream with UNKNOWN_TOPIC_ID, answers every
// rewind's read of the committed offsets of parts with code,
// runs check (if any) once A committed the input, and checks that A goes on and outputs every input exactly once.
func testRewindGoneVariant(t *testing.T, name string, c txnClient, parts []int32, code *kerr.Error, check func(*eosCase)) {
	const nparts, perPartition = 4, 3000
	e := newEOSCase(t, kafkatest.NewKfake(t), name, nparts, perPartition)
	commits := newCommitRecovery()
	a := e.start(t, c, "A", name+"-A", 2, pipeline.WithHooks(commits))
	e.waitInputCommitted(t)
	if check != nil {
		check(e)
	}
	rewindRead := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: e.group, Partitions: parts,
		Err: code, Count: -1, When: func(r kmsg.Request) bool {
			req := r.(*kmsg.OffsetFetchRequest)
			return req.RequireStable && len(req.Groups) == 1 && req.Groups[0].MemberID == nil
		}})
	defer rewindRead.Remove()
	refused := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.TxnOffsetCommit}, Group: e.group, Err: kerr.UnknownTopicID})
	defer refused.Remove()
	e.b.Fill(t, e.in, perPartition, 16)
	hw := e.hw(t)
	select {
	case <-commits.Recovered():
	case <-a.Done():
		t.Fatalf("A stopped after its refused commit (%v): %v", commits.Failed(), a.Err())
	case <-time.After(wait):
		t.Fatalf("A committed nothing within %v of its refused commit (%v)", wait, commits.Failed())
	}
	if rewindRead.Hits() == 0 {
		t.Fatalf("the rewind's read of the committed offsets was not answered %v", code)
	}
	e.finish(t, hw, a)
}
