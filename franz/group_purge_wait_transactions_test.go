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
	const group = "g"
	p := newPurgeWait(t, 2*time.Second)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-0")}, sluice.Record{Value: []byte("stay-1")})
	g, build := newHeldGraph("stay-2", topicValueOffset, txnEnd(t, p.b, p.src))
	cancel, done := startRun(t, p.src, build)
	got := map[string]int{}
	await := recordAwaiter(t, g.seen, done, time.After(recreateWait), recreateWait, got)
	await("orders:old-0@0", "stays:stay-0@0", "stays:stay-1@1")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 2})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-2")})
	g.waitHeld(t, time.After(recreateWait))

	p.recreateOrders(t, done)
	close(g.release)
	await("stays:stay-2@2")
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 3})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-3")}, sluice.Record{Value: []byte("stay-4")})
	await("stays:stay-3@3", "stays:stay-4@4")
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 5})

	close(p.release)
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-0")})
	await("orders:new-0@0")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})
	stopRun(t, cancel, done)
	awaitBackground(t, &p.src.background)
	if c := p.b.Committed(t, group, "stays"); c[0] != 5 || len(c) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 5}", c)
	}
	if c := p.b.Committed(t, group, "orders"); c[0] != 1 || len(c) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 1}", c)
	}
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
