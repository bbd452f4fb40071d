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
	r := p.startHeld(t, "never", txnEnd)
	r.await("orders:old-0@0")
	p.b.WaitCommitted(t, "g", "orders", map[int32]int64{0: 1})

	p.recreateOrders(t, r.done)
	p.stopWhilePurgeWaits(t, r.cancel, r.done, closeTimeout, margin, metadataLate)
}
