package stages

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// The hedge's first check after arm only notes the dispatcher's count of
// calls, so that a dispatcher making calls is never taken for a blocked
// one. The count is the dispatcher's calls since it started, across
// chunks, in 32 bits: a dispatcher making fast calls for a few minutes
// passes every value. Here the count is about to wrap when the hedge is
// armed, and the dispatcher makes a call before the first check: that
// check must only note the count, not hand the chunk over as if the call
// blocked.
func TestPoolHedgeFirstCheckNotesAnyCountOfCalls(t *testing.T) {
	type in [6]int8 // a type of its own: free chunks no other test uses
	p := &workerPool[in, int]{workers: 2, free: poolChunksOf[in, int]()}
	p.queues = []chan piece[in, int]{make(chan piece[in, int], 4)}
	p.ordered = make(chan *poolChunk[in, int], 4)
	// No room in the crew: the check starts no relief (it needs a stage).
	p.crew = newCrew(context.Background(), nil, 1, 0, func(*worker) {})
	p.hedge.init(context.Background(), p)
	defer p.hedge.stop()
	items := make([]stagekit.Item[in], 4)
	d := &dispatcher{}
	d.calls.Store(^uint32(0) - 1) // the count wraps

	c := p.chunk(items)
	pc := piece[in, int]{c: c, gen: uint32(c.claim.Load() >> 32), n: len(items)}
	p.hedge.arm(d, pc)
	p.hedge.t.Stop() // the test plays the timer
	c.claimNext(pc.gen, pc.n)
	d.calls.Add(1) // a call returned: the dispatcher makes progress

	p.hedge.check()
	handed, _ := p.hedge.disarm(d)
	if handed || len(p.ordered) != 0 || len(p.queues[0]) != 0 {
		t.Errorf("the first check after arm handed the chunk over (handed %v, %d queued for the emitter, %d pieces posted) while its dispatcher made a call, want it only noted", handed, len(p.ordered), len(p.queues[0]))
	}
}
