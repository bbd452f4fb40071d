package engine

import (
	"fmt"
	"sync/atomic"
)

// Stream is a typed, bounded flow of values inside one partition's graph.
// A Stream is created by the runtime (the builder's input) or by a stage,
// and must be consumed by exactly one stage; a graph whose streams are not
// all consumed, or consumed twice, fails to build with a [BuildError].
// Values travel in chunks over a bounded channel, in offset order.
type Stream[T any] struct{ e *edge[T] }

// End is what a terminal stage returns. A graph is complete only when the
// builder returns an End of that graph; join several with [All].
type End struct{ g *graph }

// All returns one End for a graph that fans out (see stages.Route). Every
// end must belong to the same graph.
func All(ends ...End) End {
	if len(ends) == 0 {
		panic(buildPanic{"pipeline.All called with no ends"})
	}
	g := ends[0].g
	for _, e := range ends {
		if e.g == nil {
			panic(buildPanic{"pipeline.All got a zero End; ends come from terminal stages such as stages.Each"})
		}
		if e.g != g {
			panic(buildPanic{"pipeline.All got ends of two different partitions' graphs"})
		}
	}
	return End{g: g}
}

// edge is the channel between two stages. Its chunks come from, and go
// back to, the Run's pool of chunks of T (edges_pool.go), so that
// steady-state flow allocates nothing; demand sizes the chunks it hands
// out.
type edge[T any] struct {
	g    *graph
	ch   chan []Item[T]
	pool *chunkPool[T]
	// demand is how many values the edge's chunks carry, a decaying
	// maximum of the lengths of the chunks released (see release).
	demand atomic.Int64
	from   string
	to     string
	mark   any // set by the producing stage for the consuming one (see Mark)
}

type edgeInfo interface{ ends() (from, to string) }

func (e *edge[T]) ends() (string, string) { return e.from, e.to }

const defaultEdgeBuffer = 4

// initialDemand is the values per chunk an edge expects before its first
// chunk came back; a stage appending more grows the chunk (a few
// allocations on the first chunks of a busy edge).
const initialDemand = 16

// demandDecay sets how fast an edge's demand falls when its chunks carry
// fewer values: by a 1/demandDecay of itself (at least 1) per chunk
// released, from 256 to 16 in about 22 chunks, while it rises at once to
// a longer chunk.
const demandDecay = 8

func newEdge[T any](g *graph, from string, buffer int) *edge[T] {
	if buffer <= 0 {
		buffer = defaultEdgeBuffer
	}
	e := &edge[T]{
		g:    g,
		ch:   make(chan []Item[T], buffer),
		pool: chunkPoolOf[T](&g.rt.chunks),
		from: from,
	}
	e.demand.Store(min(initialDemand, int64(g.rt.cfg.Chunk)))
	g.edges = append(g.edges, e)
	return e
}

// take marks the stream as consumed by stage `to`.
func (s Stream[T]) take(to string) *edge[T] {
	if s.e == nil {
		panic(buildPanic{fmt.Sprintf("stage %q got a zero Stream; streams come from the builder's input or from another stage", to)})
	}
	if !s.e.g.building {
		panic(buildPanic{fmt.Sprintf("stage %q added after the builder returned; add stages only inside the builder", to)})
	}
	if s.e.to != "" {
		panic(buildPanic{fmt.Sprintf("the output of %q is consumed twice (by %q and %q); use stages.Route to fan out", s.e.from, s.e.to, to)})
	}
	s.e.to = to
	return s.e
}

// buffer returns an empty chunk with room for the edge's demand.
func (e *edge[T]) buffer() []Item[T] { return e.pool.get(int(e.demand.Load())) }

// bufferFor returns an empty chunk with room for at least n values (the
// feeder knows how many records it is about to send).
func (e *edge[T]) bufferFor(n int) []Item[T] { return e.pool.get(max(n, 1)) }

// release gives a chunk back to the Run's pool once its values are no
// longer referenced, and folds its length into the edge's demand. Any
// goroutine may call it (a stage's workers may release what they hold).
func (e *edge[T]) release(b []Item[T]) {
	d := e.demand.Load()
	if nd := max(int64(len(b)), d-(d+demandDecay-1)/demandDecay, 1); nd != d {
		e.demand.Store(nd)
	}
	clear(b)
	e.pool.put(b)
}
