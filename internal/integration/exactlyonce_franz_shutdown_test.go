package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// newFranzShutdownTxnSource is newFranzTxnSource committing only at
// shutdown: its commit interval outlasts the test, so the one commit of
// A's Run is the one a fault refuses. The transaction is open from A's
// first produce to its shutdown: the broker must not time it out before.
func newFranzShutdownTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string) (*franz.Source, *franz.Producer) {
	t.Helper()
	src := newFranzSourceEvery(t, b, group, topic, time.Hour)
	return src, newFranzTxnProducer(t, src, txnID, time.Minute)
}

// TestFranzExactlyOnceShutdownCommitRefusedByTheGroup: member A's
// shutdown commit is refused by the group coordinator as if the group had
// moved on (ILLEGAL_GENERATION on every partition, as when the other
// members stopping at the same time started a rebalance): with output,
// the TxnOffsetCommit is refused; with none, the plain OffsetCommit of
// the transaction that delivered nothing. A aborts the transaction and
// its Run returns nil (exactlyonce.ErrGroupMoved), as a refused final
// commit does in at-least-once mode. Nothing of A's is committed: the
// group has no offsets, and B, started after, processes the whole input,
// each input's outputs read_committed exactly once. kfake answers a
// faulted TxnOffsetCommit/OffsetCommit partition without storing it
// (faults.go), as Kafka's coordinator refuses a stale generation before
// it writes.
func TestFranzExactlyOnceShutdownCommitRefusedByTheGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		produce bool
		key     kmsg.Key
	}{
		{"TxnOffsetCommit", true, kmsg.TxnOffsetCommit},
		{"OffsetCommit with no output", false, kmsg.OffsetCommit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shutdownCommitRefused(t, tc.produce, tc.key)
		})
	}
}

func shutdownCommitRefused(t *testing.T, produce bool, key kmsg.Key) {
	const parts, perPartition = 2, 300
	e := newEOSCase(t, kafkatest.NewKfake(t), "feoss", parts, perPartition)
	hw := e.hw(t)

	srcA, pA := newFranzShutdownTxnSource(t, e.b, e.group, e.in, "feoss-A")
	build := eosFanOut(franzProduce(pA, e.out), 0)
	if !produce {
		build = producesNothing(franzProduce(pA, e.out))
	}
	delivered := newCommitLog(e.b, e.group, e.in)
	a := startConsumer(t, "A", srcA, build, pipeline.WithHooks(delivered), eosQueue)
	waitFor(t, "A receiving every record", func() bool { return delivered.deliveredAtLeast(parts, perPartition) }, a)
	fault := e.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{key}, Group: e.group, Err: kerr.IllegalGeneration, Count: -1})
	if err := a.Stop(t); err != nil {
		t.Fatalf("A's Run = %v, want nil: the group refused the shutdown commit (moved on), the transaction aborted", err)
	}
	if fault.Hits() == 0 {
		t.Fatalf("A's shutdown sent no %v: the fault refused nothing", key)
	}
	fault.Remove()
	if c := e.b.Committed(t, e.group, e.in); len(c) != 0 {
		t.Fatalf("group commits after A %v, want none (A's only commit was refused)", c)
	}

	bc := e.start(t, franzTxn, "B", "feoss-B", 0)
	e.finish(t, hw, bc)
}
