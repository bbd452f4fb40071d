package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// A group source is told to stop just as the purge of a deleted (and
// recreated) topic, orders, ends (its Metadata request answered, see
// purgeWait), a record of another topic, stays, in its graph: the purge
// adds orders back, which rebalances the group while the source drains
// and commits. Run must return nil, the record of stays processed and
// committed exactly, nothing of orders' old topic committed onto the new
// one, and nothing Run started left running.
func TestSourceCommitsExactlyWhenStoppedAsAPurgeEnds(t *testing.T) { stoppedAsAPurgeEnds(t) }

// As TestSourceCommitsExactlyWhenStoppedAsAPurgeEnds, in a KIP-848 group.
func TestSourceCommitsExactlyWhenStoppedAsAPurgeEnds848(t *testing.T) {
	stoppedAsAPurgeEnds(t, kip848Group...)
}

func stoppedAsAPurgeEnds(t *testing.T, opts ...kgo.Opt) {
	const group = "g"
	p := newPurgeWait(t, 5*time.Second, opts...)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-0")})
	r := p.startHeld(t, "stay-1", doneEnd)
	r.await("orders:old-0@0", "orders:old-1@1", "stays:stay-0@0")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 2})
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: 1})
	produceFresh(t, p.b, "stays", sluice.Record{Value: []byte("stay-1")})
	r.g.waitHeld(t, time.After(recreateWait))

	p.recreateOrders(t, r.done)
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-0")})
	close(p.release)
	r.cancel()
	close(r.g.release)
	stopRun(t, r.cancel, r.done)
	awaitBackground(t, &p.src.background)
	if c := p.b.Committed(t, group, "stays"); c[0] != 2 || len(c) != 1 {
		t.Errorf("committed offsets of stays = %v, want {0: 2}", c)
	}
	// The new topic's record may or may not have been processed before
	// the stop: its offset is then 1, or nothing.
	c := p.b.Committed(t, group, "orders")
	for len(r.g.seen) > 0 {
		r.got[<-r.g.seen]++
	}
	want := map[int32]int64{}
	if r.got["orders:new-0@0"] > 0 {
		want[0] = 1
	}
	if len(c) != len(want) || c[0] != want[0] {
		t.Errorf("committed offsets of orders = %v, want %v (records seen %v)", c, want, r.got)
	}
}
