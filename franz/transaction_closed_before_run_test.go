package franz_test

import (
	"testing"

	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A transactional producer closed before its source's Run: Run fails
// (its produces are refused) within a bound, and commits nothing: a
// read_committed reader of the output sees nothing and the group has no
// committed offset past what no output covers.
func TestTransactionalProducerClosedBeforeRunCommitsNothing(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(1, 0, 10)...)
	src, p := newTxnSource(t, b, "g", "in", "txn-closed-before-run", 0)
	if err := p.Close(); err != nil {
		t.Fatalf("Close before Run = %v", err)
	}
	r := testkit.Start(t, src, produceTo(p, "out"))
	err := within(t, wait, r.Wait)
	t.Logf("Run = %v", err)
	if err == nil {
		t.Error("Run with a transactional producer closed before it returned nil")
	}
	if got := b.Committed(t, "g", "in"); len(got) != 0 {
		t.Errorf("committed %v, want nothing: no output was produced", got)
	}
}
