package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// A group source consumes a deleted (and recreated) topic, orders, anew
// while its purge from the client waits on kgo's metadata loop (see
// purgeWait); meanwhile orders is deleted and recreated a second time,
// and a record is produced to the second incarnation. Once the broker
// answers, the purge adds orders back under the ID the broker knows
// then: the record must be delivered, from the start of the newest
// topic, and committed exactly (nothing of an older incarnation lands
// on it), while stays goes on.
func TestSourceConsumesATopicRecreatedAgainWhileItsPurgeWaits(t *testing.T) {
	recreatedAgainWhilePurgeWaits(t)
}

// As TestSourceConsumesATopicRecreatedAgainWhileItsPurgeWaits, in a
// KIP-848 group (the broker assigns by topic ID).
func TestSourceConsumesATopicRecreatedAgainWhileItsPurgeWaits848(t *testing.T) {
	recreatedAgainWhilePurgeWaits(t, kip848Group...)
}

func recreatedAgainWhilePurgeWaits(t *testing.T, opts ...kgo.Opt) {
	const group = "g"
	p := newPurgeWait(t, 2*time.Second, opts...)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-0")})
	r := p.startHeld(t, "never", doneEnd)
	r.await("orders:old-0@0", "orders:old-1@1", "stays:stay-0@0")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 2})

	p.recreateOrders(t, r.done)
	// The first new topic gets a record; then it is deleted and
	// recreated while the purge still waits.
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("mid-0")})
	p.recreateOrdersOnItsLeader(t)
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-0")}, sluice.Record{Value: []byte("new-1")})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-1")})
	r.await("stays:stay-1@1")
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 2})

	close(p.release)
	r.await("orders:new-0@0", "orders:new-1@1")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 2})
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-2")})
	r.await("orders:new-2@2")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 3})
	stopRun(t, r.cancel, r.done)
	awaitBackground(t, &p.src.background)
	for rec, n := range r.got {
		if n != 1 {
			t.Errorf("%s delivered %d times, want once", rec, n)
		}
	}
	if n := r.got["orders:mid-0@0"]; n != 0 {
		t.Errorf("a record of the topic deleted meanwhile delivered %d times", n)
	}
	if c := p.b.Committed(t, group, "orders"); c[0] != 3 || len(c) != 1 {
		t.Errorf("committed offsets of orders = %v, want {0: 3}", c)
	}
}
