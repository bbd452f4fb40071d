package franz

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
)

// A group source is told to stop while it consumes a deleted (and
// recreated) topic anew, its purge from the client waiting on kgo's
// metadata loop for a Metadata request the broker answers late (well
// within the client's request timeout; see purgeWait). Nothing is left
// to drain or commit: Run must return within Config.CloseTimeout of its
// context's end (plus a margin for the runtime's drain): the poll
// goroutine does not wait for the purge, so it sees the context's end at
// once, the client being about to close. Run may say that closing
// the client goes on in the background: kgo's Close may wait for that
// request. When it does not, closing the client ends the purge: nothing
// Run started is left running.
func TestSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata(t *testing.T) {
	stopsWhileAPurgeWaits(t, doneEnd)
}

// stopsWhileAPurgeWaits runs the scenario of
// TestSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata with a
// graph ending in end.
func stopsWhileAPurgeWaits(t *testing.T, end recreatedEnd) {
	const closeTimeout = time.Second
	p := newPurgeWait(t, closeTimeout)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	r := p.startHeld(t, "never", end)
	r.await("orders:old-0@0")
	p.b.WaitCommitted(t, "g", "orders", map[int32]int64{0: 1})

	p.recreateOrders(t, r.done)
	stopWhilePurgeWaits(t, purgeWaitStop{cancel: r.cancel, done: r.done, release: p.release, background: &p.src.background,
		closeTimeout: closeTimeout, setting: "Config.CloseTimeout",
		inBackground: "closing the client did not finish within Config.CloseTimeout"})
}
