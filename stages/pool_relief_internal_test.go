package stages

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// A relieved dispatcher goes on with its chunk as a worker once its call
// returned, and inline hands the watched chunk over when that call turns
// out slow or failed (p.hedge.handOver, not bound to the dispatcher). By
// then its chunk may have been emitted (its last call just returned) and
// the relief that took the input over may have armed the hedge for a
// chunk of its own, whose calls are fast: that chunk is not the relieved
// dispatcher's to hand over, and stays with the relief (which emits it
// itself, with no hand-off).
func TestPoolRelievedDispatcherLeavesTheReliefsChunkAlone(t *testing.T) {
	type in [5]int8 // a type of its own: free chunks no other test uses
	p := &workerPool[in, int]{workers: 2, free: poolChunksOf[in, int]()}
	p.queues = []chan piece[in, int]{make(chan piece[in, int], 4)}
	p.ordered = make(chan *poolChunk[in, int], 4)
	p.crew = newCrew(context.Background(), nil, 1, 2, func(*worker) {})
	p.hedge.init(context.Background(), p)
	items := make([]stagekit.Item[in], 4)
	blocked, relief := &dispatcher{}, &dispatcher{}

	// Chunk a: the dispatcher's call of its last value blocks; the hedge
	// hands a to the emitter and relieves it (what check does, without
	// starting the relief's goroutine).
	a := p.chunk(items)
	pa := piece[in, int]{c: a, gen: uint32(a.claim.Load() >> 32), n: len(items)}
	p.hedge.arm(blocked, pa)
	p.hedge.t.Stop() // the test plays the timer
	for a.claimNext(pa.gen, pa.n) >= 0 {
	}
	p.hedge.mu.Lock()
	p.hedge.handOverLocked()
	blocked.relieved.Store(true)
	p.hedge.mu.Unlock()

	// The call returns; the emitter emits a; the relief takes the next
	// chunk, b, on its own goroutine (nothing outstanding, calls fast).
	<-p.ordered
	p.outstanding.Add(-1)
	b := p.chunk(items)
	p.hedge.arm(relief, piece[in, int]{c: b, gen: uint32(b.claim.Load() >> 32), n: len(items)})
	p.hedge.t.Stop()

	// The relieved dispatcher finds its call was slow and hands "its"
	// chunk over, as inline does.
	p.hedge.handOver(blocked)

	handed, _ := p.hedge.disarm(relief)
	if handed || len(p.ordered) != 0 || p.outstanding.Load() != 0 {
		t.Errorf("the relieved dispatcher's hand-over took the relief's chunk (handed %v, %d queued for the emitter, %d outstanding), want it left to the relief", handed, len(p.ordered), p.outstanding.Load())
	}
	if h, r := p.hedge.disarm(blocked); !h || !r {
		t.Errorf("the relieved dispatcher: handed %v relieved %v, want both", h, r)
	}
}
