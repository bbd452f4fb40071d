package stages

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/pipeline"
)

// Pool calls fn for up to workers values at once and still emits the
// results in input order. With the ByKey option, values with the same key
// are processed one at a time in offset order while different keys run in
// parallel. Errors are handled in input order, as in Map. On revoke the
// pool finishes the values it holds; when the partition context is
// cancelled, fn must return promptly.
func Pool[In, Out any](in pipeline.Stream[In], workers int, fn func(context.Context, In) (Out, error), opts ...Option) pipeline.Stream[Out] {
	sp, o := spec("Pool", opts)
	if workers <= 0 {
		panic(fmt.Sprintf("stages.Pool: workers must be at least 1, got %d", workers))
	}
	var key func(In) string
	if o.key != nil {
		key = typed[func(In) string]("Pool", "ByKey", o.key)
	}
	return pipeline.AddStage(in, sp, func(s *pipeline.Stage, inl *pipeline.Inlet[In], out *pipeline.Outlet[Out]) error {
		p := &pool[In, Out]{fn: fn, key: key, workers: workers, seed: maphash.MakeSeed()}
		return p.run(s, inl, out)
	})
}

type pool[In, Out any] struct {
	fn      func(context.Context, In) (Out, error)
	key     func(In) string
	workers int
	seed    maphash.Seed
}

// poolChunk is one input chunk being processed by the workers.
type poolChunk[In, Out any] struct {
	items []pipeline.Item[In]
	outs  []Out
	errs  []error
	left  atomic.Int32
	done  chan struct{}
}

// piece is a share of a chunk for one worker: a range, or an index list
// when keyed.
type piece[In, Out any] struct {
	c      *poolChunk[In, Out]
	lo, hi int
	idx    []int32
}

func (p *pool[In, Out]) run(s *pipeline.Stage, inl *pipeline.Inlet[In], out *pipeline.Outlet[Out]) error {
	ctx, cancel := context.WithCancel(s.Context())
	defer cancel()

	// Without a key every worker takes pieces from one queue; with a key
	// each worker has its own, so one key always lands on one worker.
	queues := make([]chan piece[In, Out], 1)
	if p.key != nil {
		queues = make([]chan piece[In, Out], p.workers)
	}
	for i := range queues {
		queues[i] = make(chan piece[In, Out], 2*p.workers)
	}
	ordered := make(chan *poolChunk[In, Out], 2*p.workers)

	var wg sync.WaitGroup
	for w := range p.workers {
		q := queues[w%len(queues)]
		wg.Go(func() { p.work(ctx, q) })
	}
	var emitErr error
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		if emitErr = p.emit(ctx, s, inl, out, ordered); emitErr != nil {
			cancel()
		}
	}()

	p.dispatch(ctx, inl, queues, ordered)
	close(ordered)
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	<-emitted
	return emitErr
}

// dispatch splits input chunks into pieces for the workers and queues the
// chunks, in order, for the emitter.
func (p *pool[In, Out]) dispatch(ctx context.Context, inl *pipeline.Inlet[In], queues []chan piece[In, Out], ordered chan<- *poolChunk[In, Out]) {
	for {
		var items []pipeline.Item[In]
		select {
		case c, ok := <-inl.C():
			if !ok {
				return
			}
			items = c
		case <-ctx.Done():
			return
		}
		c := &poolChunk[In, Out]{items: items, outs: make([]Out, len(items)), errs: make([]error, len(items)), done: make(chan struct{})}
		c.left.Store(int32(len(items)))
		select {
		case ordered <- c:
		case <-ctx.Done():
			return
		}
		for _, pc := range p.split(c, len(queues)) {
			q := queues[0]
			if p.key != nil {
				q = queues[pc.lo]
			}
			select {
			case q <- pc:
			case <-ctx.Done():
				return
			}
		}
	}
}

// split cuts a chunk into pieces: equal ranges without a key, one index
// list per worker (piece.lo is the worker) with a key.
func (p *pool[In, Out]) split(c *poolChunk[In, Out], queues int) []piece[In, Out] {
	n := len(c.items)
	if p.key == nil {
		k := min(p.workers, n)
		size := (n + k - 1) / k
		pcs := make([]piece[In, Out], 0, k)
		for lo := 0; lo < n; lo += size {
			pcs = append(pcs, piece[In, Out]{c: c, lo: lo, hi: min(lo+size, n)})
		}
		return pcs
	}
	byWorker := make([][]int32, queues)
	for i, it := range c.items {
		w := int(maphash.String(p.seed, p.key(it.Value)) % uint64(queues))
		byWorker[w] = append(byWorker[w], int32(i))
	}
	pcs := make([]piece[In, Out], 0, queues)
	for w, idx := range byWorker {
		if len(idx) > 0 {
			pcs = append(pcs, piece[In, Out]{c: c, lo: w, idx: idx})
		}
	}
	return pcs
}

func (p *pool[In, Out]) work(ctx context.Context, q <-chan piece[In, Out]) {
	for pc := range q {
		c := pc.c
		if pc.idx != nil {
			for _, i := range pc.idx {
				c.outs[i], c.errs[i] = call(p.fn, ctx, c.items[i].Value)
			}
			if c.left.Add(-int32(len(pc.idx))) == 0 {
				close(c.done)
			}
			continue
		}
		for i := pc.lo; i < pc.hi; i++ {
			c.outs[i], c.errs[i] = call(p.fn, ctx, c.items[i].Value)
		}
		if c.left.Add(-int32(pc.hi-pc.lo)) == 0 {
			close(c.done)
		}
	}
}

// emit sends finished chunks downstream in input order.
func (p *pool[In, Out]) emit(ctx context.Context, s *pipeline.Stage, inl *pipeline.Inlet[In], out *pipeline.Outlet[Out], ordered <-chan *poolChunk[In, Out]) error {
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil
		}
		buf := out.Buffer()
		for i, it := range c.items {
			if err := c.errs[i]; err != nil {
				if err := s.Fail(it.Ticket, err); err != nil {
					return err
				}
				continue
			}
			buf = append(buf, pipeline.Item[Out]{Value: c.outs[i], Ticket: it.Ticket})
		}
		inl.Release(c.items)
		if !out.Send(buf) {
			return nil
		}
	}
	return nil
}
