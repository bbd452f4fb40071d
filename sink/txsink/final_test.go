package txsink_test

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/testkit"
)

// After a graceful revoke the store's position is the partition's final
// one, past a record dead-lettered after the last rows were written, so
// the next owner neither writes a row again nor dead-letters again.
func TestGracefulRevokeStoresTheFinalPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := txsinktest.NewMemStore[int]()
		log := bs("0", "1", "2", "bad")
		for i, want := range []int{1, 0} {
			dl := testkit.NewDeadLetters()
			m := startGraph(t, s, txsink.Options[int]{ExactlyOnce: true, BatchSize: 3}, badIsInvalid, dl.Option())
			m.assign(t, log...)
			if i == 0 {
				m.fake.WaitCommitted(t, topic, 0, 4)
			}
			must(t, m.fake.Revoke(topic, 0))
			if got := dl.Len(); got != want {
				t.Fatalf("member %d: %d dead letters; want %d", i+1, got, want)
			}
			if p := position(t, s, 0); p.Next != 4 || p.Written != 2 {
				t.Fatalf("member %d: position after the revoke %+v; want Next 4, Written 2", i+1, p)
			}
			must(t, m.run.Stop(t))
		}
		sameInts(t, "rows", s.Rows(), []int{0, 1, 2})
	})
}
