package stages

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// The hedge of a pool's goroutine watches a chunk until disarm. When the
// pool's goroutine handed its chunk to the emitter (a failed value, slow
// calls), the emitter may recycle the chunk once its last value finished,
// before the pool's goroutine gets to disarm; the free chunks are shared
// by every Pool of the same types (every partition's), so another Pool
// may already reuse it. A hedge check then must not touch the chunk: it
// would count a helper of the other Pool's use (which then posts one
// worker fewer; with two workers, its own hedge can post none, and a
// blocked call holds every value after it), and post a piece of it.
func TestPoolHedgeLeavesAChunkReusedByAnotherPoolAlone(t *testing.T) {
	type in [2]int8 // a type of its own: free chunks no other test uses
	newPool := func() *workerPool[in, int] {
		p := &workerPool[in, int]{workers: 2, free: poolChunksOf[in, int]()}
		p.queues = []chan piece[in, int]{make(chan piece[in, int], 4)}
		p.crew = newCrew(context.Background(), nil, 1, 2, func(*worker) {})
		p.crew.running[0] = 2 // its workers are busy: posted starts none
		return p
	}
	y, x := newPool(), newPool()
	items := make([]stagekit.Item[in], 4)

	// y's goroutine works on c, with its hedge armed (the timer itself
	// is stopped: the test runs its check).
	c := y.chunk(items)
	y.hedge.init(y)
	y.hedge.arm(piece[in, int]{c: c, gen: uint32(c.claim.Load() >> 32), n: len(items)})
	y.hedge.t.Stop()
	for c.claimNext(uint32(c.claim.Load()>>32), len(items)) >= 0 {
	}
	// The emitter emitted c and recycled it; x takes it for its next
	// chunk, before y's goroutine disarmed its hedge.
	y.recycle(c)
	c2 := x.chunk(items)
	if c2 != c {
		t.Fatal("x did not reuse y's chunk")
	}
	y.hedge.check() // y's timer fires now
	y.hedge.disarm()
	if h := c2.helpers.Load(); h != 1 {
		t.Errorf("x's chunk counts %d helpers before x posted any, want 1 (y's hedge counted one for it)", h)
	}
	if n := len(y.queues[0]); n != 0 {
		t.Errorf("y's hedge posted %d pieces of a chunk y no longer holds, want 0", n)
	}
}
