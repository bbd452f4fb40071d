package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// A group source consumes a deleted (and recreated) topic, orders, anew
// while a record of another topic, stays, is in its graph; the purge of
// orders from the client waits on kgo's metadata loop for a Metadata
// request the broker answers only once the test says so (see purgeWait).
// Meanwhile the record finishes and more records of stays come: each
// must be delivered, and the group's committed offset of stays must
// reach exactly what was processed of it, while the purge still waits.
// The poll loop must go on polling and committing while the purge waits,
// and no commit may fail for waiting behind the held request: the
// commit's check of the topic IDs goes to the group's coordinator, whose
// connection the test never holds (each such failure would cost the
// commit's timeout, and an exactly-once source its transaction).
// Meanwhile orders is not fetched under its old ID
// (each such fetch fails at once). Once the broker answers, orders is
// consumed anew from the start of the new topic.
func TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata(t *testing.T) {
	commitsWhileAPurgeWaits(t, doneEnd)
}

// As TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata, in a
// KIP-848 group (the broker revokes the purged topic's partitions in a
// heartbeat's answer).
func TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata848(t *testing.T) {
	commitsWhileAPurgeWaits(t, doneEnd, kip848Group...)
}

// commitsWhileAPurgeWaits runs the scenario of
// TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata with a graph
// ending in end and a client made with opts too.
func commitsWhileAPurgeWaits(t *testing.T, end recreatedEnd, opts ...kgo.Opt) {
	const group = "g"
	p := newPurgeWait(t, 2*time.Second, opts...)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-0")}, sluice.Record{Value: []byte("stay-1")})
	r := p.startHeld(t, "stay-2", end)
	r.await("orders:old-0@0", "stays:stay-0@0", "stays:stay-1@1")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 2})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-2")})
	r.g.waitHeld(t, time.After(recreateWait))

	p.recreateOrders(t, r.done)
	close(r.g.release)
	r.await("stays:stay-2@2")
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 3})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-3")}, sluice.Record{Value: []byte("stay-4")})
	r.await("stays:stay-3@3", "stays:stay-4@4")
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 5})
	// The fetches of orders under its old ID fail at once: kgo must not
	// fetch it while it waits to be purged.
	if n := p.goneAgain.Load(); n != 0 {
		t.Errorf("orders reported gone %d more times while its purge waited, want none", n)
	}
	if n := p.failedChecks.Load(); n != 0 {
		t.Errorf("%d commits failed while the purge waited, their check of the topic IDs unanswered, want none", n)
	}

	close(p.release)
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-0")})
	r.await("orders:new-0@0")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})
	stopRun(t, r.cancel, r.done)
	awaitBackground(t, &p.src.background)
	if c := p.b.Committed(t, group, "stays"); c[0] != 5 || len(c) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 5}", c)
	}
	if c := p.b.Committed(t, group, "orders"); c[0] != 1 || len(c) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 1}", c)
	}
}
