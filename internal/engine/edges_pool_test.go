package engine

import (
	"context"
	"fmt"
	"testing"
)

// newTestEdge returns an edge of a bare graph of rt (no stages run).
func newTestEdge[T any](rt *Group) *edge[T] {
	return newEdge[T](&graph{rt: rt}, "test", 0)
}

// Edges of every partition of a Run take their chunks from one pool per
// value type: a chunk one partition's edge gave back is the next one
// another partition's edge of the same type hands out, instead of each
// edge keeping its own.
func TestEdgesOfARunShareChunks(t *testing.T) {
	rt := &Group{cfg: Config{Chunk: 256}}
	a, b := newTestEdge[int](rt), newTestEdge[int](rt)
	if a.pool != b.pool {
		t.Fatal("two edges of one Run and value type have different chunk pools")
	}
	if s := newTestEdge[string](rt); any(s.pool) == any(a.pool) {
		t.Fatal("edges of different value types share a pool")
	}
	if other := newTestEdge[int](&Group{cfg: Config{Chunk: 256}}); other.pool == a.pool {
		t.Fatal("edges of two Runs share a pool")
	}
	c := append(a.buffer(), Item[int]{Value: 1})
	a.release(c)
	if got := b.buffer(); &got[:1][0] != &c[0] {
		t.Fatal("the chunk released by one partition's edge was not reused by the other's")
	}
}

// An edge hands out chunks sized by what it carries: a partition whose
// chunks hold a few values gets small chunks (a power of two fitting
// them), one whose chunks are long gets long ones at once.
func TestEdgeChunksFollowDemand(t *testing.T) {
	rt := &Group{cfg: Config{Chunk: 256}}
	e := newTestEdge[int](rt)
	if got := cap(e.buffer()); got != initialDemand {
		t.Fatalf("the first chunk has room for %d values, want %d", got, initialDemand)
	}
	send := func(n int) {
		c := e.buffer()
		for i := range n {
			c = append(c, Item[int]{Value: i})
		}
		e.release(c)
	}
	for range 40 {
		send(3)
	}
	// The free chunk of 16 is reused while it is free (a larger free
	// chunk is handed out before a new one is made); held elsewhere, the
	// next one is sized to the edge's demand.
	held := e.buffer()
	if got := cap(held); got != initialDemand {
		t.Fatalf("with a free chunk of %d the edge handed out one of %d", initialDemand, got)
	}
	if got := cap(e.buffer()); got != 4 {
		t.Fatalf("after chunks of 3 values the edge makes chunks of %d, want 4", got)
	}
	send(200)
	if got := cap(e.buffer()); got != 256 {
		t.Fatalf("after a chunk of 200 values the edge hands out chunks of %d, want 256", got)
	}
	if got := cap(e.bufferFor(5)); got != 8 {
		t.Fatalf("bufferFor(5) has room for %d values, want 8", got)
	}
}

// A chunk that came back larger than its edge's class (a stage appended
// past its capacity) is handed out again for a smaller request rather
// than left unused while the pool allocates new small chunks.
func TestChunkPoolHandsOutLargerFreeChunks(t *testing.T) {
	var p chunkPool[int]
	big := make([]Item[int], 0, 300) // class 8, as append grows chunks
	p.put(big)
	if got := p.get(20); cap(got) != 300 {
		t.Fatalf("get(20) with only a 300-value chunk free returned one of %d values, want the free one", cap(got))
	}
	if n := p.freeChunks(8); n != 0 {
		t.Fatalf("%d chunks of class 8 still free, want 0", n)
	}
	if got := p.get(20); cap(got) != 32 {
		t.Fatalf("get(20) on an empty pool returned a chunk of %d values, want 32", cap(got))
	}
	p.put(make([]Item[int], 0, 8))
	if got := p.get(20); cap(got) != 32 {
		t.Fatalf("get(20) with only a smaller chunk free returned one of %d values, want a new one of 32", cap(got))
	}
}

// The input edge's chunks hold the records queued, not Config.Chunk
// slots: with many partitions each receiving little, a partition holds a
// chunk sized to its records (before, every chunk had room for 256).
func TestInputChunksFitTheQueuedRecords(t *testing.T) {
	const parts = 8
	caps := make(chan string, parts)
	build := chunkEnd(func(s *Stage, c []Item[Record]) {
		caps <- fmt.Sprintf("%d/%d", len(c), cap(c))
		for _, it := range c {
			s.Done(it.Ticket)
		}
	})
	err := Run(context.Background(), roomyConfig(), build, func(ctx context.Context, g *Group) error {
		tps := make([]TopicPartition, parts)
		for i := range tps {
			tps[i] = TopicPartition{Topic: "t", Partition: int32(i)}
		}
		if err := g.Assign(tps); err != nil {
			return err
		}
		for _, tp := range tps {
			g.Deliver(tp, []Record{{Topic: tp.Topic, Partition: tp.Partition, Offset: 0}, {Topic: tp.Topic, Partition: tp.Partition, Offset: 1}, {Topic: tp.Topic, Partition: tp.Partition, Offset: 2}})
		}
		for range parts {
			if got := <-caps; got != "3/4" {
				t.Errorf("a partition delivered 3 records got a chunk of length/capacity %s, want 3/4", got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
