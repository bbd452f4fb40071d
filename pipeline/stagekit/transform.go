package stagekit

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice/pipeline"
)

// Emitter collects the values a [Transform] function derives from the
// value it was called for. Use it only during that call, from the calling
// goroutine.
type Emitter[Out any] struct {
	buf []Item[Out]
	t   Ticket
}

// Emit passes v on downstream, after the values emitted before it. The
// input value's records commit once every value emitted for it completed.
func (e *Emitter[Out]) Emit(v Out) { e.buf = append(e.buf, Item[Out]{Value: v, Ticket: e.t}) }

// Transform adds a stage that calls fn for every input value, in order,
// from one goroutine. fn emits zero or more values for it with emit; the
// kit does the rest:
//
//   - fn is called through [Call]: no call once the partition's context
//     is done, stuck detection, timing when observed, a panic becomes a
//     *sluice.PanicError, a transient error is retried under the stage's
//     policy (what a failed attempt emitted is discarded first);
//   - no value emitted: the input value is done (counted as filtered);
//     n values: they carry its ticket (n references), in order;
//   - an error goes to [Stage.Fail]: an Invalid one dead-letters the value's
//     records and the stage goes on; any other stops Run after the values
//     before it were sent.
//
// A nil fn fails the build naming the stage.
func Transform[In, Out any](in pipeline.Stream[In], spec StageSpec, fn func(ctx context.Context, v In, emit *Emitter[Out]) error) pipeline.Stream[Out] {
	if fn == nil && spec.Problem == nil {
		spec.Problem = errors.New("the function is nil")
	}
	return AddStage(in, spec, func(s *Stage, inl *Inlet[In], out *Outlet[Out]) error {
		t := transformer[In, Out]{s: s, ctx: s.Context(), pr: s.Probe(), fn: fn, out: out}
		return ForEachChunk(s, inl, t.chunk)
	})
}

// transformer is a running Transform stage.
type transformer[In, Out any] struct {
	s       *Stage
	ctx     context.Context
	pr      *Probe
	fn      func(context.Context, In, *Emitter[Out]) error
	out     *Outlet[Out]
	em      Emitter[Out]
	dropped []Ticket
}

func (t *transformer[In, Out]) chunk(chunk []Item[In]) error {
	s, em := t.s, &t.em
	em.buf = t.out.Buffer()
	t.dropped = t.dropped[:0]
	for i := range chunk {
		it := &chunk[i]
		mark := len(em.buf)
		em.t = it.Ticket
		err := call(t.ctx, s, t.pr, it.Ticket, func() error {
			em.buf = em.buf[:mark] // a retry starts afresh
			return t.fn(t.ctx, it.Value, em)
		})
		if err != nil {
			em.buf = em.buf[:mark]
			if err := s.Fail(it.Ticket, err); err != nil {
				t.flush() // what finished before the failure still completes
				return err
			}
			continue
		}
		switch n := len(em.buf) - mark; {
		case n == 0:
			t.dropped = append(t.dropped, it.Ticket)
		case n > 1:
			s.Retain(it.Ticket, n-1)
		}
	}
	if !t.flush() {
		return ErrStop
	}
	return nil
}

// flush completes the dropped values and sends the emitted ones; false
// when the context is done.
func (t *transformer[In, Out]) flush() bool {
	if len(t.dropped) > 0 {
		t.s.Drop(t.dropped...)
		t.dropped = t.dropped[:0]
	}
	buf := t.em.buf
	t.em.buf = nil
	return t.out.Send(buf)
}

// Sink adds a terminal stage that calls fn for every value, in order,
// from one goroutine, through [Call] (like [Transform]): a value is done
// once fn returned nil for it; an error goes to [Stage.Fail]. A nil fn
// fails the build naming the stage.
//
// While calls are slow each value completes as its call returns. While
// they are fast (the previous chunk's took under 5 µs each) completing
// each value on its own would cost more than the call, so the stage keeps
// the values whose call returned and completes them up to 32 at a time,
// at the end of the chunk and before a failure; a group of 32 that took
// longer ends the keeping for the rest of its chunk. The runtime completes
// the kept values itself whenever it needs them while the stage is inside
// its next call: the source's periodic commit (Offsets), a delivery or a
// source that finds the in-flight budget full, a paused partition's
// resume, the partition's feeder and dead-letter goroutine when they wait
// for completions, a drain that abandons the call. So the commit never waits for the rest of a chunk, a finished
// value never holds the budget that another partition needs, and an
// abandoned call's error and commit stop at it; only the completion hooks
// may count a kept value later, by about two polls of the source at most
// (each poll completes what outlived the one before). A share group's
// values are never kept.
func Sink[In any](in pipeline.Stream[In], spec StageSpec, fn func(ctx context.Context, v In) error) pipeline.End {
	if fn == nil && spec.Problem == nil {
		spec.Problem = errors.New("the function is nil")
	}
	return AddEnd(in, spec, func(s *Stage, inl *Inlet[In]) error {
		ctx, pr := s.Context(), s.Probe()
		d := sinkDone{s: s.s}
		defer d.flush()
		return ForEachChunk(s, inl, func(chunk []Item[In]) error {
			d.begin()
			for i := range chunk {
				it := &chunk[i]
				if err := call(ctx, s, pr, it.Ticket, func() error { return fn(ctx, it.Value) }); err != nil {
					d.failed()
					if err := s.Fail(it.Ticket, err); err != nil {
						return err
					}
					continue
				}
				d.done(it.Ticket)
			}
			d.end()
			return nil
		})
	})
}
