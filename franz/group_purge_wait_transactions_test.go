package franz

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
)

// As TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata, with a
// transactional producer bound to the source (exactly-once, the same
// runner and client): the offsets of stays are committed in the
// producer's transactions while the purge of orders waits, and orders
// is consumed anew once the broker answers.
func TestTransactionalSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata(t *testing.T) {
	commitsWhileAPurgeWaits(t, txnEnd)
}

// As TestSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata, with a
// transactional producer bound to the source: Run must return within
// Config.CloseTimeout of its context's end (plus a margin), and the
// producer close cleanly after.
func TestTransactionalSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata(t *testing.T) {
	const (
		closeTimeout = time.Second
		margin       = 2 * time.Second
		metadataLate = 8 * time.Second
	)
	p := newPurgeWait(t, closeTimeout)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	g, build := newHeldGraph("never", topicValueOffset, txnEnd(t, p.b, p.src))
	cancel, done := startRun(t, p.src, build)
	got := map[string]int{}
	recordAwaiter(t, g.seen, done, time.After(recreateWait), recreateWait, got)("orders:old-0@0")
	p.b.WaitCommitted(t, "g", "orders", map[int32]int64{0: 1})

	p.recreateOrders(t, done)
	p.stopWhilePurgeWaits(t, cancel, done, closeTimeout, margin, metadataLate)
}
