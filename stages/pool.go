package stages

import (
	"context"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Pool calls fn for up to workers values at once and still emits the
// results in input order. Errors are handled in input order, as in Map.
// On revoke the pool finishes the values it holds; when the partition
// context is cancelled, fn must return promptly. workers < 1 or a nil fn
// fails the build.
//
// workers is a limit per partition: each partition's graph has its own
// pool, so a consumer owning n partitions makes up to n*workers calls at
// once. Workers are goroutines started as slow calls need them (one more
// while a chunk has values no worker took, up to workers) that leave once
// nothing is queued, so a partition whose pool is idle, or whose calls
// are fast, holds none. For a limit across the consumer give a [Limiter]
// as an option (and [LockKey] for one call at a time per key across the
// consumer).
//
// While calls are fast (under 5 µs each, on average over groups of up to
// 32) and nothing waits to be emitted, the pool makes them on the
// goroutine taking its input, one after another, and hands no value to a
// worker: handing a value over and back costs more than such a call. At
// the first failed value the chunk goes to the emitter, so that the
// failure is handled as soon as the values before it are. Once the calls
// turn slow the rest of the chunk goes to the workers and the next
// chunks too, until their calls are fast again. A call that runs for 1 to
// 2 ms (blocked, or waiting for a retry's backoff) has the values
// finished before it passed on (they commit), the values after it go to
// the workers (unless workers is 1), and another goroutine takes the input
// over, so that it holds back no input; the pool still makes at most
// workers calls at once, the blocked one included. PoolByKey always hands
// values to its workers.
func Pool[In, Out any](in pipeline.Stream[In], workers int, fn func(context.Context, In) (Out, error), opts ...CallOption) pipeline.Stream[Out] {
	cs := specOf("Pool", opts)
	return pool(in, cs, "Pool", workers, nil, fn)
}

// PoolByKey is [Pool] keeping values with the same key in order: calls for
// one key never overlap and run in offset order, while different keys run
// in parallel. A panic of key stops Run naming the value; the values
// before it are still emitted. A nil key fails the build.
//
// Both limits are per partition: workers calls at once in each
// partition's graph, and one at a time per key within each partition. A
// key whose records land on two partitions (the topic is keyed by
// something else) is called from both at once. For limits across the
// consumer give a [Limiter] (calls at once) and a [KeyLock] (one call at
// a time per key, this key) as options.
func PoolByKey[In, Out any](in pipeline.Stream[In], workers int, key func(In) string, fn func(context.Context, In) (Out, error), opts ...CallOption) pipeline.Stream[Out] {
	cs := specOf("Pool", opts)
	if key == nil {
		problem(&cs.StageSpec, "stages.PoolByKey: key is nil")
	}
	return pool(in, cs, "PoolByKey", workers, key, fn)
}

func pool[In, Out any](in pipeline.Stream[In], cs *callSpec, fname string, workers int, key func(In) string, fn func(context.Context, In) (Out, error)) pipeline.Stream[Out] {
	if workers < 1 {
		problem(&cs.StageSpec, "stages.%s: workers is %d; want at least 1", fname, workers)
	}
	fn = limitedFn(cs, fname, key, fn)
	return stagekit.AddStage(in, cs.StageSpec, func(s *stagekit.Stage, inl *stagekit.Inlet[In], out *stagekit.Outlet[Out]) error {
		p := &workerPool[In, Out]{s: s, fn: fn, key: key, workers: workers, seed: maphash.MakeSeed(),
			free: poolChunksOf[In, Out]()}
		return p.run(s, inl, out)
	})
}

type workerPool[In, Out any] struct {
	s       *stagekit.Stage
	fn      func(context.Context, In) (Out, error)
	key     func(In) string
	workers int
	seed    maphash.Seed

	// free holds chunks the emitter is done with, for dispatch to reuse
	// (with their slices): steady flow allocates nothing. It is shared
	// with the other Pools of the same types (pool_chunks.go).
	free *poolChunkPool[In, Out]
	pcs  []piece[In, Out] // dispatch's scratch (pieces are sent by value)
	crew *crew            // the workers running now

	// The stage's input and output, and the channels between the
	// dispatchers, the workers and the emitter; set by run.
	in       *stagekit.Inlet[In]
	queues   []chan piece[In, Out]
	ordered  chan *poolChunk[In, Out]
	progress chan struct{} // a worker finished a value
	quit     chan struct{} // closed when the emitter returned
	out      *stagekit.Outlet[Out]

	// The calls the dispatcher taking the input makes (pool_inline.go).
	// outstanding counts the chunks queued for the emitter and not yet
	// emitted: while it is zero that dispatcher owns the output. fast
	// says whether the latest calls measured took under fastCall each
	// (set by the dispatchers and by the workers).
	outstanding atomic.Int32
	fast        atomic.Bool
	hedge       hedge[In, Out]

	// The relief dispatchers (pool_intake.go): the input loop's result
	// of the last one, their goroutines, and the probes of those that
	// stepped down (guarded by hedge.mu).
	result chan error
	relief sync.WaitGroup
	probes []*stagekit.Probe
}

// poolChunk is one input chunk being processed by the workers. fin[i] is
// set once outs[i] and errs[i] are final. wait is the index the emitter
// waits for (-1: none): the worker that finishes it signals progress.
type poolChunk[In, Out any] struct {
	items []stagekit.Item[In]
	outs  []Out
	errs  []error
	fin   []atomic.Bool
	wait  atomic.Int32
	// claim is the chunk's generation (high 32 bits, bumped each time the
	// chunk is reused) and the index of its next unclaimed value (low 32
	// bits), for pools without a key: workers claim values one at a time
	// (see claimNext), so a piece left in a queue from an earlier use
	// claims nothing (a piece cannot stay queued for 2^32 reuses).
	claim atomic.Uint64
	// helpers counts the pieces posted for the chunk (unkeyed pools).
	helpers atomic.Int32
	// refs counts who still uses the chunk: the emitter, and the
	// dispatcher too while it works on a chunk it handed to the emitter
	// (pool_inline.go); the last to let go recycles it (release).
	refs atomic.Int32
	// byWorker[w] lists the values of worker w (keyed pools only).
	byWorker [][]int32
}

// chunk returns a chunk holding a copy of items, with the capacity of the
// power of two fitting them, reusing a free one when there is one. The
// copy lets the input chunk go back to the Run's free chunks at once,
// while the pool holds up to 2*workers chunks.
func (p *workerPool[In, Out]) chunk(items []stagekit.Item[In]) *poolChunk[In, Out] {
	n := len(items)
	c := p.free.get(n)
	c.items, c.outs, c.errs, c.fin = c.items[:n], c.outs[:n], c.errs[:n], c.fin[:n]
	copy(c.items, items)
	c.wait.Store(-1)
	c.helpers.Store(1)
	c.refs.Store(1)
	// A new generation, published after the values: a worker that claims
	// index i of it sees them.
	c.claim.Store((c.claim.Load()>>32 + 1) << 32)
	return c
}

// claimNext returns the index of the next value of generation gen of c that
// no worker claimed yet, or -1 when there is none (every value of that
// use was claimed, or c was reused since).
func (c *poolChunk[In, Out]) claimNext(gen uint32, n int) int {
	for {
		v := c.claim.Load()
		if uint32(v>>32) != gen || int(uint32(v)) >= n {
			return -1
		}
		if c.claim.CompareAndSwap(v, v+1) {
			return int(uint32(v))
		}
	}
}

// release lets go of c for one of its users and recycles it when that
// was the last.
func (p *workerPool[In, Out]) release(c *poolChunk[In, Out]) {
	if c.refs.Add(-1) == 0 {
		p.recycle(c)
	}
}

// recycle clears c (its values are no longer referenced) and gives it back
// for reuse.
func (p *workerPool[In, Out]) recycle(c *poolChunk[In, Out]) {
	clear(c.items)
	clear(c.outs)
	clear(c.errs)
	// A plain clear: every worker's store to fin happened before the
	// emitter's load that saw it (the emitter recycles c once it saw
	// every value finished), and c reaches a worker again only through
	// a channel send.
	clear(c.fin)
	p.free.put(c)
}

// piece is a share of a chunk for one worker: without a key, the right to
// claim values of generation gen of a chunk of n values (any number of
// workers may hold one); with a key, an index list (lo is the worker).
type piece[In, Out any] struct {
	c   *poolChunk[In, Out]
	gen uint32
	n   int
	lo  int
	idx []int32
}

func (p *workerPool[In, Out]) run(s *stagekit.Stage, inl *stagekit.Inlet[In], out *stagekit.Outlet[Out]) error {
	// The group's context ends when the emitter fails (its cause is the
	// emitter's error) or the partition's context ends.
	g, ctx := errgroup.WithContext(s.Context())

	// Without a key every worker takes pieces from one queue; with a key
	// each worker has its own, so one key always lands on one worker.
	p.queues = make([]chan piece[In, Out], 1)
	if p.key != nil {
		p.queues = make([]chan piece[In, Out], p.workers)
	}
	for i := range p.queues {
		p.queues[i] = make(chan piece[In, Out], 2*p.workers)
	}
	p.ordered = make(chan *poolChunk[In, Out], 2*p.workers)
	p.progress = make(chan struct{}, 1)
	// quit is closed when the emitter returned: every chunk was emitted
	// (or nothing more will be), so the workers stop. The queues are
	// never closed: workers post pieces to them too (see work).
	p.quit = make(chan struct{})
	p.in, p.out = inl, out
	p.result = make(chan error, 1)
	var workers sync.WaitGroup
	defer workers.Wait()  // a worker leaves once quit is closed
	defer p.relief.Wait() // a dispatcher that stepped down is done with its chunk
	p.crew = newCrew(ctx, s, len(p.queues), p.workers/len(p.queues), func(w *worker) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			p.work(ctx, w, p.queues[w.queue])
		}()
	})
	// Unkeyed pools start with the stage's goroutine making the calls
	// (pool_inline.go); the hedge is stopped before the workers and the
	// relief dispatchers are waited for, so that it starts none after.
	p.fast.Store(p.key == nil)
	p.hedge.init(ctx, p)
	defer p.hedge.stop()

	g.Go(func() error {
		defer close(p.quit)
		err := p.emit(ctx, s, out)
		if err != nil {
			// Stop Run now, not when the stage returns: that waits for
			// every call it started, and a call that ignores its context
			// would hold the partition forever instead of being
			// abandoned past the exit grace.
			s.Abort(err)
		}
		return err // ends ctx, so that no more calls are made
	})

	// A dispatch error (the key function panicked) is reported after the
	// chunks before it were emitted, like an error of fn. When a relief
	// dispatcher took the input over, the last one reports the result.
	dispatchErr := p.takeInput(ctx, &dispatcher{probe: s.Probe()})
	if dispatchErr == errRelieved {
		dispatchErr = <-p.result
	}
	close(p.ordered)
	if g.Wait() != nil {
		return nil // the emitter's failure, reported with Abort
	}
	return dispatchErr
}

// dispatch handles one input chunk on dispatcher d: while the calls are
// fast and the emitter has nothing left to emit, d makes them itself
// (pool_inline.go); otherwise it splits the chunk into pieces for the
// workers and queues the chunk, in order, for the emitter. It returns an
// error when the key function panicked (ErrStop when ctx ended or the
// emitter returned, errRelieved when d no longer takes the input).
func (p *workerPool[In, Out]) dispatch(ctx context.Context, d *dispatcher, items []stagekit.Item[In]) error {
	c := p.chunk(items)
	if p.key == nil && p.outstanding.Load() == 0 && p.fast.Load() {
		return p.inline(ctx, d, c)
	}
	// On a split error, c holds only the values before the failing one:
	// they are still processed and emitted, then the error is returned.
	pcs, splitErr := p.split(c, len(p.queues))
	if splitErr != nil && len(c.items) == 0 {
		p.recycle(c)
		return splitErr
	}
	if !p.toEmitter(ctx, c) {
		return stagekit.ErrStop
	}
	for _, pc := range pcs {
		qi := 0
		if p.key != nil {
			qi = pc.lo
		}
		if !sendOrStop(ctx, p.queues[qi], pc, p.quit) {
			return stagekit.ErrStop
		}
		p.crew.posted(qi)
	}
	return splitErr
}

// toEmitter queues c for the emitter, which emits it after the chunks
// queued before it; false when ctx ended or the emitter returned.
func (p *workerPool[In, Out]) toEmitter(ctx context.Context, c *poolChunk[In, Out]) bool {
	p.outstanding.Add(1)
	return sendOrStop(ctx, p.ordered, c, p.quit)
}

// sendOrStop sends v on ch and reports true, or reports false when ctx
// ends or quit is closed first.
func sendOrStop[T any](ctx context.Context, ch chan<- T, v T, quit <-chan struct{}) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	case <-quit:
		return false
	}
}

// split cuts a chunk into pieces: one piece to claim its values from
// without a key, one index list per worker (piece.lo is the worker) with
// a key. A panic of the key function is returned as the stage error of
// its value, with c cut down to the values before it and pieces for those.
func (p *workerPool[In, Out]) split(c *poolChunk[In, Out], queues int) ([]piece[In, Out], error) {
	if p.key == nil {
		// One piece: the worker taking it posts more while values are
		// left unclaimed (see work), so a chunk wakes only the workers
		// it keeps busy.
		p.pcs = append(p.pcs[:0], piece[In, Out]{c: c, gen: uint32(c.claim.Load() >> 32), n: len(c.items)})
		return p.pcs, nil
	}
	if len(c.byWorker) != queues {
		c.byWorker = make([][]int32, queues)
	}
	for w := range c.byWorker {
		c.byWorker[w] = c.byWorker[w][:0]
	}
	keyOf := p.keyOf
	for i, it := range c.items {
		k, err := stagekit.Protect(context.Background(), it.Value, keyOf)
		if err != nil {
			ferr := p.s.Fail(it.Ticket, err)
			clear(c.items[i:]) // no longer referenced once cut off
			c.items, c.outs, c.errs, c.fin = c.items[:i], c.outs[:i], c.errs[:i], c.fin[:i]
			return p.pieces(c), ferr
		}
		w := int(maphash.String(p.seed, k) % uint64(queues))
		c.byWorker[w] = append(c.byWorker[w], int32(i))
	}
	return p.pieces(c), nil
}

// pieces returns one piece per worker with values of c to process.
func (p *workerPool[In, Out]) pieces(c *poolChunk[In, Out]) []piece[In, Out] {
	pcs := p.pcs[:0]
	for w, idx := range c.byWorker {
		if len(idx) > 0 {
			pcs = append(pcs, piece[In, Out]{c: c, lo: w, idx: idx})
		}
	}
	p.pcs = pcs
	return pcs
}

func (p *workerPool[In, Out]) keyOf(_ context.Context, v In) (string, error) { return p.key(v), nil }

// work runs fn on the values of the pieces it takes from q, the queue of
// w, until q is empty or quit is closed; then it hands w back and returns
// (see crew). An unkeyed piece is a chunk whose values the worker claims
// one at a time; before calling fn on its first claimed value it posts the
// piece again (without waiting) while values are left unclaimed and fewer
// than workers pieces of the chunk were posted, so that an idle worker
// joins in. A slow fn so has every worker busy within a few wake-ups,
// while a fast one finishes a chunk on one or two workers instead of
// waking all of them for a few values each. The pace of an unkeyed
// piece's calls sets p.fast.
func (p *workerPool[In, Out]) work(ctx context.Context, w *worker, q chan piece[In, Out]) {
	pr := w.probe
	yielded := false
	for {
		var pc piece[In, Out]
		select {
		case pc = <-q:
		case <-p.quit:
			p.crew.leave(w, func() bool { return true })
			return
		default:
			// Nothing queued: yield once first, so that a worker whose
			// dispatcher is about to post the next chunk takes it
			// instead of leaving and a new one starting.
			if !yielded {
				yielded = true
				runtime.Gosched()
				continue
			}
			if p.crew.leave(w, func() bool { return len(q) == 0 }) {
				return
			}
			continue
		}
		yielded = false
		if pc.idx != nil {
			for _, i := range pc.idx {
				p.compute(ctx, pr, pc.c, int(i))
			}
			continue
		}
		start, calls := time.Now(), 0
		for first := true; ; first = false {
			i := pc.c.claimNext(pc.gen, pc.n)
			if i < 0 {
				break
			}
			if first && i+1 < pc.n {
				p.help(pc, w.queue, q)
			}
			p.compute(ctx, pr, pc.c, i)
			calls++
		}
		if calls > 0 {
			p.fast.Store(time.Since(start) <= time.Duration(calls)*fastCall)
		}
	}
}

// compute makes the call for value i of c on the goroutine owning pr and
// marks it finished, waking the emitter if it waits for that value.
func (p *workerPool[In, Out]) compute(ctx context.Context, pr *stagekit.Probe, c *poolChunk[In, Out], i int) {
	if err := ctx.Err(); err != nil {
		// The emitter failed or the partition is gone: nothing of
		// this value will be emitted, so do not call fn for it.
		c.errs[i] = err
	} else {
		c.outs[i], c.errs[i] = stagekit.Call(ctx, p.s, pr, c.items[i], p.fn)
	}
	c.fin[i].Store(true)
	// The emitter stores wait before it checks fin[i] again: either
	// it sees fin[i] set, or this sees wait == i and wakes it.
	if c.wait.Load() == int32(i) {
		select {
		case p.progress <- struct{}{}:
		default:
		}
	}
}

// help posts pc to q for another worker, unless workers pieces of its
// chunk were posted already or q is full (then workers are busy with
// other chunks' pieces).
func (p *workerPool[In, Out]) help(pc piece[In, Out], qi int, q chan<- piece[In, Out]) {
	if pc.c.helpers.Add(1) > int32(p.workers) {
		pc.c.helpers.Add(-1)
		return
	}
	select {
	case q <- pc:
		p.crew.posted(qi)
	default:
		pc.c.helpers.Add(-1)
	}
}

// emit sends finished values downstream in input order, as soon as the
// values before them finished, so the commit follows the finished prefix.
// Once a chunk is emitted it counts down outstanding.
func (p *workerPool[In, Out]) emit(ctx context.Context, s *stagekit.Stage, out *stagekit.Outlet[Out]) error {
	for c := range p.ordered {
		for i := 0; i < len(c.items); {
			if !c.fin[i].Load() {
				c.wait.Store(int32(i))
				if c.fin[i].Load() {
					continue
				}
				select {
				case <-p.progress: // maybe for an earlier value: check again
				case <-ctx.Done():
					return nil
				}
				continue
			}
			var err error
			var sent bool
			if i, sent, err = emitFinished(s, out, c, i); err != nil || !sent {
				return err
			}
		}
		p.release(c)
		p.outstanding.Add(-1)
	}
	return nil
}

// emitFinished sends, in one chunk, the finished values of c from index
// i up to the first unfinished one, and returns the index after them.
// A failed value goes to s.Fail; an error from it ends the emission
// after the values before it were sent. sent is false when the output
// took nothing (the partition's context is done).
func emitFinished[In, Out any](s *stagekit.Stage, out *stagekit.Outlet[Out], c *poolChunk[In, Out], i int) (next int, sent bool, err error) {
	buf := out.Buffer()
	for ; i < len(c.items) && c.fin[i].Load(); i++ {
		it := c.items[i]
		if err := c.errs[i]; err != nil {
			if err := s.Fail(it.Ticket, err); err != nil {
				out.Send(buf) // what finished before the failure still completes
				return i, false, err
			}
			continue
		}
		buf = append(buf, stagekit.Item[Out]{Value: c.outs[i], Ticket: it.Ticket})
	}
	return i, out.Send(buf), nil
}
