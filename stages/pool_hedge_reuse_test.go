package stages

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// The hedge of a pool's goroutine watches a chunk until disarm. When the
// pool's goroutine handed its chunk to the emitter (a failed value, slow
// calls), the emitter may be done with the chunk once its last value
// finished, before the pool's goroutine gets to disarm; the free chunks
// are shared by every Pool of the same types (every partition's), so
// were the emitter to recycle it then, another Pool could reuse it, and a
// hedge check would touch that use: count a helper of it (which then
// posts one worker fewer; with two workers, its own hedge can post none)
// and post a piece of it. The pool's goroutine holds its own reference
// to the chunk until it disarmed, so the chunk is recycled only after.
func TestPoolHedgeLeavesAChunkReusedByAnotherPoolAlone(t *testing.T) {
	type in [2]int8 // a type of its own: free chunks no other test uses
	newPool := func() *workerPool[in, int] {
		p := &workerPool[in, int]{workers: 2, free: poolChunksOf[in, int]()}
		p.queues = []chan piece[in, int]{make(chan piece[in, int], 4)}
		p.ordered = make(chan *poolChunk[in, int], 4)
		p.crew = newCrew(context.Background(), nil, 1, 2, func(*worker) {})
		p.crew.running[0] = 2 // its workers are busy: posted starts none
		return p
	}
	y, x := newPool(), newPool()
	items := make([]stagekit.Item[in], 4)
	d := &dispatcher{}

	// y's goroutine works on c, with its hedge armed (the timer itself
	// is stopped: the test runs its check), and hands it to the emitter.
	c := y.chunk(items)
	y.hedge.init(context.Background(), y)
	y.hedge.arm(d, piece[in, int]{c: c, gen: uint32(c.claim.Load() >> 32), n: len(items)})
	y.hedge.t.Stop()
	y.hedge.handOver(d)
	if got := <-y.ordered; got != c {
		t.Fatal("the hand-over queued another chunk")
	}
	for c.claimNext(uint32(c.claim.Load()>>32), len(items)) >= 0 {
	}
	// The emitter emitted c and let go of it; x takes a chunk for its
	// next one, before y's goroutine disarmed its hedge.
	y.release(c)
	c2 := x.chunk(items)
	if c2 == c {
		t.Fatal("x reused y's chunk while y's goroutine still held it")
	}
	y.hedge.check() // y's timer fires now: it notes where y's goroutine is
	y.hedge.check() // and again: no value claimed since
	if h := c2.helpers.Load(); h != 1 {
		t.Errorf("x's chunk counts %d helpers before x posted any, want 1", h)
	}
	if n := len(y.queues[0]); n != 0 {
		t.Errorf("y's hedge posted %d pieces of a chunk whose values were all claimed, want 0", n)
	}
	// Once y's goroutine disarmed and let go, the chunk is free again.
	if handed, _ := y.hedge.disarm(d); !handed {
		t.Error("disarm does not report the hand-over")
	}
	y.release(c)
	if c3 := x.chunk(items); c3 != c {
		t.Error("the chunk was not recycled once both let go of it")
	}
}
