package engine

import (
	"reflect"
	"sync"

	"github.com/sluice-go/sluice/internal/sizeclass"
)

// This file is the storage of the edges' chunks: one free list per value
// type and Run, shared by every edge of every partition, and chunks sized
// by what an edge carries (see edge.buffer) in power-of-two capacity
// classes. A Run's chunk memory so follows the values in its graphs now,
// not the partition count times the largest chunk each edge ever used.

// chunkPool is a Run's free chunks of one value type. Its methods are safe
// for concurrent use; edges call them once per chunk.
type chunkPool[T any] struct {
	mu   sync.Mutex
	free sizeclass.Lists[[]Item[T]] // empty chunks, by capacity class
}

// get returns an empty chunk with room for at least n values (n >= 1):
// a free one of the smallest class that fits n and has one, else a new
// one of the capacity of n's class. Taking a larger free chunk matters:
// a stage that appends past a chunk's capacity gives back a chunk of a
// larger class than its edge asks for, which would otherwise pile up
// unused while the edge allocates.
func (p *chunkPool[T]) get(n int) []Item[T] {
	k := sizeclass.For(n)
	p.mu.Lock()
	b, ok := p.free.Take(k)
	p.mu.Unlock()
	if ok {
		return b
	}
	return make([]Item[T], 0, 1<<k)
}

// put takes back a chunk whose values were cleared (edge.release); a
// chunk without capacity is ignored. The free lists never hold more
// chunks than the Run once used at the same time.
func (p *chunkPool[T]) put(b []Item[T]) {
	if cap(b) == 0 {
		return
	}
	k := sizeclass.OfCap(cap(b))
	p.mu.Lock()
	p.free.Put(k, b[:0])
	p.mu.Unlock()
}

// freeChunks returns how many chunks of class k are free (tests).
func (p *chunkPool[T]) freeChunks(k int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.free.Len(k)
}

// chunkPools are a Run's chunk pools, one per value type of its edges.
type chunkPools struct {
	mu    sync.Mutex
	pools map[reflect.Type]any // *chunkPool[T] by T
}

// chunkPoolOf returns the Run's pool of chunks of T, creating it on first
// use. Edges call it when they are created (in a builder).
func chunkPoolOf[T any](ps *chunkPools) *chunkPool[T] {
	t := reflect.TypeFor[T]()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.pools[t]; ok {
		return p.(*chunkPool[T])
	}
	if ps.pools == nil {
		ps.pools = make(map[reflect.Type]any)
	}
	p := &chunkPool[T]{}
	ps.pools[t] = p
	return p
}
