package stages

import (
	"runtime"
	"testing"
)

// Pools of the same value types share their free chunks, and a chunk has
// the capacity of the power of two fitting its input chunk: a Pool of a
// partition receiving little holds small chunks, and a chunk one Pool
// gave back serves another.
func TestPoolChunksAreSharedAndSizedByInput(t *testing.T) {
	type in [1]int8 // a type of its own: a pool no other test uses
	p := poolChunksOf[in, int]()
	if poolChunksOf[in, int]() != p {
		t.Fatal("two Pools of the same types have different free chunks")
	}
	c := p.get(3)
	if cap(c.items) != 4 || cap(c.outs) != 4 || cap(c.errs) != 4 || cap(c.fin) != 4 {
		t.Fatalf("a chunk for 3 values has capacities %d/%d/%d/%d, want 4", cap(c.items), cap(c.outs), cap(c.errs), cap(c.fin))
	}
	p.put(c)
	if got := p.get(2); got != c {
		t.Fatal("the chunk given back was not reused for the next input chunk of the same class")
	}
	big := p.get(200)
	if cap(big.outs) != 256 {
		t.Fatalf("a chunk for 200 values has room for %d, want 256", cap(big.outs))
	}
	p.put(big)
	if got := p.get(3); got != big {
		t.Fatal("a free larger chunk was not handed out before a new small one was made")
	}
}

// Free chunks no Pool took for a whole GC cycle are dropped: the free
// lists age at every garbage collection, and a chunk survives one aging
// (taken again after it) but not two.
func TestPoolChunksAgeOutAtGC(t *testing.T) {
	type in [2]int8 // a type of its own: a pool no other test uses
	p := poolChunksOf[in, int]()
	c := p.get(8)
	p.put(c)
	p.age()
	if got := p.get(8); got != c {
		t.Fatal("a chunk given back before one aging was not reused")
	}
	p.put(c)
	p.age()
	p.age()
	if got := p.get(8); got == c {
		t.Fatal("a chunk unused for two agings was handed out again")
	}

	// The agings follow the garbage collections.
	if !agesWithin(100) {
		t.Fatal("100 garbage collections and the free chunks did not age")
	}
}

// agesWithin collects garbage until the free chunks aged once more, at
// most n times, and reports whether they did.
func agesWithin(n int) bool {
	before := gcCycles.Load()
	for range n {
		if gcCycles.Load() != before {
			return true
		}
		runtime.GC()
		runtime.Gosched()
	}
	return gcCycles.Load() != before
}
