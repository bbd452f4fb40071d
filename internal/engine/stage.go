package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
)

// This file is the stage-authoring API: the stage handle, inputs, outputs
// and AddStage/AddFanOut/AddEnd, which package pipeline/stagekit exports
// for writing a new kind of stage (package stages is built on it).

// StageSpec describes a stage being added to a graph.
type StageSpec struct {
	// Name identifies the stage in errors, logs and dead letters. Empty
	// means Kind followed by the stage's position in the graph ("Map#2").
	Name string
	// Kind is the stage's type, used for the default name ("Map").
	Kind string
	// Buffer is the capacity, in chunks, of the stage's output channel(s);
	// 0 means the default (4).
	Buffer int
	// Retry overrides Run's retry policy for this stage (see pipeline.WithRetry).
	Retry *RetryPolicy
	// Holds is how many input values the stage may keep before it emits
	// anything (a Batch's size), or 0. A new graph's feeder may hold at
	// least the largest Holds of its stages (pace.go), so that such a
	// stage's first output does not wait for a timer.
	Holds int
}

func (g *graph) newStage(spec StageSpec) *Stage {
	s := &Stage{g: g, name: g.stageName(spec), retry: g.rt.cfg.Retry, observed: g.rt.hooks.timesStages()}
	g.stages = append(g.stages, s)
	g.pace.holds(spec.Holds)
	if spec.Buffer < 0 {
		panic(buildPanic{fmt.Sprintf("stage %q: Buffer %d must be 0 (the default, 4 chunks) or more", s.name, spec.Buffer)})
	}
	if spec.Retry != nil {
		if err := checkRetry(*spec.Retry); err != nil {
			panic(buildPanic{fmt.Sprintf("stage %q: retry policy %+v: %v", s.name, *spec.Retry, err)})
		}
		s.retry = withDefaults(*spec.Retry, g.rt.cfg.DefaultRetry)
	}
	return s
}

func (g *graph) stageName(spec StageSpec) string {
	g.nstages++
	if spec.Name != "" {
		return spec.Name
	}
	kind := spec.Kind
	if kind == "" {
		kind = "stage"
	}
	return fmt.Sprintf("%s#%d", kind, g.nstages)
}

// Stage is a running stage's handle on its partition: its context and the
// ticket operations that drive commits. Its methods may be called from any
// goroutine the stage runs.
type Stage struct {
	name     string
	g        *graph
	retry    RetryPolicy
	retryLog retryLog    // rate limit of its retry warnings (retry_log.go)
	running  atomic.Bool // its goroutine has not exited (abandon.go)
	// observed caches Observed: the Run's hooks are fixed when it starts,
	// and a stage asks once per call.
	observed bool
	// later holds the completions DoneLater kept (done_later.go).
	later laterDone
}

// Name returns the stage's name.
func (s *Stage) Name() string { return s.name }

// Context returns the partition's context: cancelled when the partition is
// lost, when its drain times out, and after it drained on revoke.
func (s *Stage) Context() context.Context { return s.g.ctx }

// Partition returns the partition the stage runs for.
func (s *Stage) Partition() *Partition { return s.g.part }

// Done completes one reference of each ticket: the value reached an End,
// was filtered out, or otherwise needs no more work. A ticket with no
// reference left (completed already) stops Run with an error wrapping
// [ErrTicketCompleted] and is not completed again.
func (s *Stage) Done(ts ...Ticket) { s.misused(s.g.tr.done(ts...)) }

// Abort stops Run with err, as if the stage had returned it. It is for
// stages whose values complete on goroutines other than the stage's own
// (a batch shared by several partitions); errors reported after the
// partition started being revoked are ignored, as for returned errors.
func (s *Stage) Abort(err error) { s.g.rt.fail(s.g, err) }

// Stopping reports whether the stage's partition is being revoked or is
// gone: its input has stopped or its context is done.
func (s *Stage) Stopping() bool { return s.g.stopping() }

// Drop completes tickets of values a stage filtered out; unlike Done it
// counts them as filtered for hooks (sluice.HookValuesFiltered).
func (s *Stage) Drop(ts ...Ticket) {
	s.g.rt.hooks.ValuesFiltered(s.g.tp, s.name, len(ts))
	s.misused(s.g.tr.done(ts...))
}

// Observed reports whether some hook handles stage calls
// (sluice.HookStageCall) and so wants per-call timings (see Called).
// Stages read no clock when it is false.
func (s *Stage) Observed() bool { return s.observed }

// Called reports one call of the stage's user function to the stage-call
// hooks: it took d and returned err.
func (s *Stage) Called(d time.Duration, err error) { s.g.rt.hooks.StageCall(s.name, s.g.tp, d, err) }

// Retain adds n references to t, for a value that became n+1 values (each
// of which is completed with Done). Call it before passing any of them on.
// A t with no reference left stops Run (see [ErrTicketCompleted]).
func (s *Stage) Retain(t Ticket, n int) {
	if n > 0 {
		s.misused(s.g.tr.retain(t, n))
	}
}

// Join returns one ticket standing for all of ts (which it takes over):
// completing it completes each of them. Batching stages use it. One of ts
// with no reference left stops Run (see [ErrTicketCompleted]).
func (s *Stage) Join(ts []Ticket) Ticket {
	t, f := s.g.tr.join(ts)
	s.misused(f)
	return t
}

// Split turns a joined ticket back into the n tickets it was joined from,
// in Join order, for a stage that hands a batch's values on one by one:
// the caller's reference to t becomes one reference to each returned
// ticket, which it completes instead of t (Done, Fail), so that a value
// that fails concerns only its own records. Other references to t are
// unaffected. Unless t is a joined ticket of exactly n tickets, Split
// returns nil and changes nothing; a joined t with no reference left
// also stops Run (see [ErrTicketCompleted]).
func (s *Stage) Split(t Ticket, n int) []Ticket {
	ts, f := s.g.tr.split(t, n)
	s.misused(f)
	return ts
}

// Fail handles the error of a stage function for the value holding ticket
// t. For an error marked with [sluice.Invalid], it queues every record behind t
// for the partition's dead-letter goroutine, which delivers them in offset
// order (see pipeline.WithDeadLetter) and then completes t, and returns nil at
// once. For any other
// error it returns a *StageError naming the stage and the record's
// position; the stage must then return that error, which stops Run. The
// ticket is not completed, so nothing past the record is committed. In
// share mode ([Group.TrackAcks]) retries exhausted release the records
// behind t and an invalid record without destination is rejected: Fail
// completes t and returns nil for both.
func (s *Stage) Fail(t Ticket, err error) error {
	if err == nil {
		return nil
	}
	if s.g.tr.share != nil && s.shareFail(t, err) {
		return nil
	}
	if sluice.IsInvalid(err) {
		if s.g.rt.cfg.DeadLetter == nil {
			return s.stageError(s.g.tr.records(nil, t), fmt.Errorf("%w: %w", sluice.ErrNoDeadLetter, err))
		}
		s.g.deadLetter(s, t, err)
		return nil
	}
	return s.stageError(s.g.tr.records(nil, t), err)
}

func (s *Stage) stageError(recs []Record, err error) *StageError {
	off := int64(-1)
	if len(recs) > 0 {
		off = recs[0].Offset
	}
	return &StageError{Stage: s.name, Topic: s.g.part.Topic, Partition: s.g.part.Partition, Offset: off, Err: err}
}

// Inlet is a stage's input.
type Inlet[T any] struct {
	e   *edge[T]
	ctx context.Context
}

// Recv returns the next chunk of values. It returns false when the input
// is closed (the graph is draining and everything upstream finished) or
// the partition context is done; once the context is done it never
// returns a chunk, even if some are still buffered. Pass the chunk to
// Release once its values are no longer referenced.
func (in *Inlet[T]) Recv() ([]Item[T], bool) {
	if in.ctx.Err() != nil {
		return nil, false
	}
	select {
	case c, ok := <-in.e.ch:
		if ok && in.ctx.Err() != nil {
			in.e.release(c)
			return nil, false
		}
		return c, ok
	case <-in.ctx.Done():
		return nil, false
	}
}

// C returns the input channel, for stages that select on it together with
// a timer; such stages must also select on the stage context, and drop a
// chunk received once the context is done (select picks ready cases at
// random).
func (in *Inlet[T]) C() <-chan []Item[T] { return in.e.ch }

// Release returns a received chunk for reuse.
func (in *Inlet[T]) Release(c []Item[T]) { in.e.release(c) }

// Outlet is a stage's output.
type Outlet[T any] struct {
	e   *edge[T]
	ctx context.Context
	s   *Stage // the stage writing it; nil for the graph's input
}

// Buffer returns an empty chunk to fill and Send.
func (o *Outlet[T]) Buffer() []Item[T] { return o.e.buffer() }

// Send passes a chunk downstream, blocking while the downstream channel is
// full. It returns false when the partition context is done; the chunk's
// values are then dropped without completing their tickets. Empty chunks
// are recycled, not sent. A value whose ticket has no reference left (the
// stage completed it already) is never sent: Run stops with an error
// wrapping [ErrTicketCompleted], the partition's context is cancelled and
// Send returns false.
func (o *Outlet[T]) Send(c []Item[T]) bool {
	if len(c) == 0 {
		o.e.release(c)
		return true
	}
	if o.s != nil {
		if f := unheld(o.s.g.tr, c); f != nil {
			o.s.misused(f)
			o.e.release(c)
			return false
		}
	}
	select {
	case o.e.ch <- c:
		return true
	case <-o.ctx.Done():
		return false
	}
}

// AddStage adds a stage with one input and one output to in's graph. run
// is started in its own goroutine once the builder returned; it must read
// in until Recv returns false and return nil, or return the error from
// [Stage.Fail]. Returning closes the output. A panic in run stops Run with
// a *PanicError.
func AddStage[In, Out any](in Stream[In], spec StageSpec, run func(s *Stage, in *Inlet[In], out *Outlet[Out]) error) Stream[Out] {
	outs := AddFanOut(in, spec, 1, func(s *Stage, i *Inlet[In], os []*Outlet[Out]) error { return run(s, i, os[0]) })
	return outs[0]
}

// AddFanOut adds a stage with one input and n outputs, like [AddStage].
func AddFanOut[In, Out any](in Stream[In], spec StageSpec, n int, run func(s *Stage, in *Inlet[In], outs []*Outlet[Out]) error) []Stream[Out] {
	g := graphOf(in)
	s := g.newStage(spec)
	e := in.take(s.name)
	if n <= 0 {
		panic(buildPanic{fmt.Sprintf("stage %q needs at least one output, got %d", s.name, n)})
	}
	streams := make([]Stream[Out], n)
	outlets := make([]*Outlet[Out], n)
	for i := range streams {
		oe := newEdge[Out](g, s.name, spec.Buffer)
		streams[i] = Stream[Out]{e: oe}
		outlets[i] = &Outlet[Out]{e: oe, ctx: g.ctx, s: s}
	}
	inlet := &Inlet[In]{e: e, ctx: g.ctx}
	g.spawn(s, inlet.discard, func() error { return run(s, inlet, outlets) }, func() {
		for _, o := range outlets {
			close(o.e.ch)
		}
	})
	return streams
}

// AddEnd adds a terminal stage, like [AddStage] without output.
func AddEnd[In any](in Stream[In], spec StageSpec, run func(s *Stage, in *Inlet[In]) error) End {
	g := graphOf(in)
	s := g.newStage(spec)
	e := in.take(s.name)
	inlet := &Inlet[In]{e: e, ctx: g.ctx}
	g.spawn(s, inlet.discard, func() error { return run(s, inlet) }, func() {})
	return End{g: g}
}

// discard empties the input after the stage stopped, so upstream stages
// are never blocked by a failed stage; the values are not completed.
func (in *Inlet[T]) discard() {
	for {
		if _, ok := in.Recv(); !ok {
			return
		}
	}
}

func graphOf[T any](in Stream[T]) *graph {
	if in.e == nil {
		panic(buildPanic{"a stage got a zero Stream; streams come from the builder's input or from another stage"})
	}
	return in.e.g
}

// runStage runs a stage's loop, turning a panic into a *PanicError.
func runStage(run func() error) (err error) {
	defer CatchPanic(&err)
	return run()
}

// buildPanic carries a wiring mistake out of the builder.
type buildPanic struct{ problem string }

// spawn registers a stage goroutine, started after the builder returns.
func (g *graph) spawn(s *Stage, discard func(), run func() error, closeOut func()) {
	s.running.Store(true)
	g.starts = append(g.starts, func() {
		defer g.exitOne()
		defer s.running.Store(false)
		defer closeOut()
		err := runStage(run)
		if pe, ok := err.(*PanicError); ok {
			err = &StageError{Stage: s.name, Topic: g.part.Topic, Partition: g.part.Partition, Offset: -1, Err: pe}
		}
		if err != nil {
			g.rt.fail(g, err)
		}
		discard()
	})
}
