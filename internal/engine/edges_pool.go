package engine

import (
	"math/bits"
	"reflect"
	"sync"
)

// This file is the storage of the edges' chunks: one free list per value
// type and Run, shared by every edge of every partition, and chunks sized
// by what an edge carries (see edge.buffer) in power-of-two capacity
// classes. A Run's chunk memory so follows the values in its graphs now,
// not the partition count times the largest chunk each edge ever used.

// chunkClasses is the number of capacity classes: class k holds chunks
// whose capacity is at least 1<<k and below 1<<(k+1).
const chunkClasses = bits.UintSize

// chunkPool is a Run's free chunks of one value type. Its methods are safe
// for concurrent use; edges call them once per chunk.
type chunkPool[T any] struct {
	mu   sync.Mutex
	free [chunkClasses][][]Item[T] // empty chunks, by class
	// nonEmpty has bit k set when free[k] holds a chunk.
	nonEmpty uint
}

// classFor is the class whose chunks hold at least n values (n >= 1).
func classFor(n int) int { return bits.Len(uint(n - 1)) }

// get returns an empty chunk with room for at least n values (n >= 1):
// a free one of the smallest class that fits n and has one, else a new
// one of the capacity of n's class. Taking a larger free chunk matters:
// a stage that appends past a chunk's capacity gives back a chunk of a
// larger class than its edge asks for, which would otherwise pile up
// unused while the edge allocates.
func (p *chunkPool[T]) get(n int) []Item[T] {
	k := classFor(n)
	p.mu.Lock()
	if m := p.nonEmpty >> k << k; m != 0 {
		k = bits.TrailingZeros(m)
		free := p.free[k]
		b := free[len(free)-1]
		free[len(free)-1] = nil
		p.free[k] = free[:len(free)-1]
		if len(free) == 1 {
			p.nonEmpty &^= 1 << k
		}
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return make([]Item[T], 0, 1<<k)
}

// put takes back a chunk whose values were cleared (edge.release); a
// chunk without capacity is ignored. The free lists never hold more
// chunks than the Run once used at the same time.
func (p *chunkPool[T]) put(b []Item[T]) {
	if cap(b) == 0 {
		return
	}
	k := bits.Len(uint(cap(b))) - 1
	p.mu.Lock()
	p.free[k] = append(p.free[k], b[:0])
	p.nonEmpty |= 1 << k
	p.mu.Unlock()
}

// freeChunks returns how many chunks of class k are free (tests).
func (p *chunkPool[T]) freeChunks(k int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free[k])
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
