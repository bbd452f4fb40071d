package engine

import "fmt"

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

// edge is the channel between two stages, plus a free list of chunk
// buffers so steady-state flow allocates nothing.
type edge[T any] struct {
	g    *graph
	ch   chan []Item[T]
	free chan []Item[T]
	from string
	to   string
	mark any // set by the producing stage for the consuming one (see Mark)
}

type edgeInfo interface{ ends() (from, to string) }

func (e *edge[T]) ends() (string, string) { return e.from, e.to }

const defaultEdgeBuffer = 4

func newEdge[T any](g *graph, from string, buffer int) *edge[T] {
	if buffer <= 0 {
		buffer = defaultEdgeBuffer
	}
	e := &edge[T]{
		g:    g,
		ch:   make(chan []Item[T], buffer),
		free: make(chan []Item[T], buffer+2),
		from: from,
	}
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

// buffer returns an empty chunk, reusing a released one when possible.
func (e *edge[T]) buffer() []Item[T] {
	select {
	case b := <-e.free:
		return b
	default:
		return make([]Item[T], 0, e.g.rt.cfg.Chunk)
	}
}

func (e *edge[T]) release(b []Item[T]) {
	clear(b)
	select {
	case e.free <- b[:0]:
	default:
	}
}
