package stages

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/internal/sizeclass"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// This file is the storage of Pool's chunks: free chunks are shared by
// every Pool of the process with the same value types, instead of each
// Pool keeping 2*workers+2 chunks as large as the largest input chunk it
// ever saw. A chunk's capacity is the power of two that fits its input
// chunk, so a partition receiving little holds little; and free chunks
// age out like sync.Pool's: at every garbage collection the free lists
// become the "old" lists (the previous old lists are dropped), so a chunk
// no Pool took for a whole GC cycle is freed. (Not sync.Pool itself: under
// the race detector it drops a quarter of what it is given, which would
// make steady-state flow allocate.)

// poolChunkPool holds the free chunks of one Pool instantiation. Its
// methods are safe for concurrent use; Pool stages call them once per
// input chunk.
type poolChunkPool[In, Out any] struct {
	mu sync.Mutex
	// Free chunks by capacity class (internal/sizeclass).
	new sizeclass.Lists[*poolChunk[In, Out]] // given back since the last GC
	old sizeclass.Lists[*poolChunk[In, Out]] // given back before it, dropped at the next
}

// poolChunkPools maps the reflect.Type of poolChunk[In, Out] to its
// *poolChunkPool[In, Out].
var poolChunkPools sync.Map

// agedPools are the pools the GC ages (every poolChunkPool).
var (
	agedMu     sync.Mutex
	agedPools  []interface{ age() }
	agingStart sync.Once
)

// poolChunksOf returns the process's free chunks for Pools from In to
// Out. A Pool stage calls it once, when it starts.
func poolChunksOf[In, Out any]() *poolChunkPool[In, Out] {
	t := reflect.TypeFor[poolChunk[In, Out]]()
	if p, ok := poolChunkPools.Load(t); ok {
		return p.(*poolChunkPool[In, Out])
	}
	p, loaded := poolChunkPools.LoadOrStore(t, &poolChunkPool[In, Out]{})
	if !loaded {
		agedMu.Lock()
		agedPools = append(agedPools, p.(*poolChunkPool[In, Out]))
		agedMu.Unlock()
		agingStart.Do(func() { ageAtNextGC() })
	}
	return p.(*poolChunkPool[In, Out])
}

// gcCycles counts the agings done (tests).
var gcCycles atomic.Int64

// agingSentinel is the fresh object whose unreachability ages the pools.
// It is 16 bytes, the least the runtime never packs into a tiny block:
// tiny objects (pointer-free and smaller) share a 16-byte block that is
// freed only once all of them are unreachable, so a sentinel sharing one
// with a long-lived object would never be found unreachable, and the
// free chunks would never age again.
type agingSentinel [16]byte

// ageAtNextGC arranges for every pool to age once the next garbage
// collection found a fresh object unreachable, and again after each
// following one. The cleanup runs on the runtime's cleanup goroutine.
func ageAtNextGC() {
	runtime.AddCleanup(new(agingSentinel), func(struct{}) {
		agedMu.Lock()
		pools := agedPools
		agedMu.Unlock()
		for _, p := range pools {
			p.age()
		}
		gcCycles.Add(1)
		ageAtNextGC()
	}, struct{}{})
}

// age drops the old free chunks and makes the new ones old (keeping the
// lists' arrays for the new ones).
func (p *poolChunkPool[In, Out]) age() {
	p.mu.Lock()
	p.old, p.new = p.new, p.old
	p.new.Clear()
	p.mu.Unlock()
}

// get returns a cleared chunk with room for at least n values (n >= 1): a
// free one of the smallest class that fits n and has one (a larger chunk
// comes back larger only when its input chunk was), else a new one with
// the capacity of n's class.
func (p *poolChunkPool[In, Out]) get(n int) *poolChunk[In, Out] {
	k := sizeclass.For(n)
	p.mu.Lock()
	c, ok := p.new.Take(k)
	if !ok {
		c, ok = p.old.Take(k)
	}
	p.mu.Unlock()
	if ok {
		return c
	}
	m := 1 << k
	return &poolChunk[In, Out]{items: make([]stagekit.Item[In], 0, m), outs: make([]Out, 0, m),
		errs: make([]error, 0, m), fin: make([]atomic.Bool, 0, m)}
}

// put takes back a chunk whose values are cleared (workerPool.recycle).
func (p *poolChunkPool[In, Out]) put(c *poolChunk[In, Out]) {
	n := cap(c.outs)
	if n == 0 {
		return
	}
	k := sizeclass.OfCap(n)
	p.mu.Lock()
	p.new.Put(k, c)
	p.mu.Unlock()
}
