package stages

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// The hedge's timer is an AfterFunc: disarm's Stop cannot take back a
// check whose goroutine already started, so a check due for one chunk can
// run after the pool's goroutine disarmed and armed the hedge for the
// next one (it waits on the hedge's mutex, or is scheduled late). The
// workers are to join when one call ran for 1 to 2 ms (the Pool doc): a
// check that finds the chunk just armed, with no value claimed yet, must
// not take that for a blocked call, hand the chunk to the emitter and post
// it for a worker.
func TestPoolHedgeCheckOfTheChunkBeforeLeavesAChunkJustArmedAlone(t *testing.T) {
	type in [3]int8 // a type of its own: free chunks no other test uses
	p := &workerPool[in, int]{workers: 2, free: poolChunksOf[in, int]()}
	p.queues = []chan piece[in, int]{make(chan piece[in, int], 4)}
	p.ordered = make(chan *poolChunk[in, int], 4)
	p.crew = newCrew(context.Background(), nil, 1, 2, func(*worker) {})
	p.crew.running[0] = 2 // its workers are busy: posted starts none
	p.hedge.init(context.Background(), p)
	items := make([]stagekit.Item[in], 4)
	d := &dispatcher{}

	// Chunk a: the pool's goroutine claims every value (fast calls), and
	// the timer fires as it is done; its check is late.
	a := p.chunk(items)
	p.hedge.arm(d, piece[in, int]{c: a, gen: uint32(a.claim.Load() >> 32), n: len(items)})
	p.hedge.t.Stop() // the test runs the check itself
	for a.claimNext(uint32(a.claim.Load()>>32), len(items)) >= 0 {
	}
	if handed, _ := p.hedge.disarm(d); handed {
		t.Fatal("chunk a was handed over")
	}
	p.recycle(a)

	// Chunk b is armed; the check due for chunk a runs now, before the
	// pool's goroutine claimed b's first value.
	b := p.chunk(items)
	p.hedge.arm(d, piece[in, int]{c: b, gen: uint32(b.claim.Load() >> 32), n: len(items)})
	p.hedge.t.Stop()
	p.hedge.check()
	handed, _ := p.hedge.disarm(d)
	if handed || len(p.ordered) != 0 || len(p.queues[0]) != 0 {
		t.Errorf("a check of the chunk before handed chunk b over (%v; %d queued for the emitter, %d pieces posted) before any of its calls ran, want none", handed, len(p.ordered), len(p.queues[0]))
	}
}
