package stagekit

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/pipeline"
)

// Stage is a running stage's handle on its partition: its context and the
// ticket operations that drive commits. The run function given to
// [AddStage], [AddFanOut] or [AddEnd] gets it; it stays valid for the
// life of the partition's graph, and its methods may be called from any
// goroutine the stage runs (its own, a pool of workers, a callback of a
// client), unless a method says otherwise.
type Stage struct{ s *engine.Stage }

// Name returns the stage's name: StageSpec.Name, or its Kind followed by
// its position in the graph ("Map#2"). Errors, logs and dead letters name
// the stage by it.
func (s *Stage) Name() string { return s.s.Name() }

// Context returns the partition's context (pipeline.Partition.Context):
// cancelled when the partition is lost, when its drain times out, after
// it drained on revoke or shutdown, and when a stage misused a ticket.
// Once it is done, stop at once: values in hand are dropped uncompleted
// (they are not committed).
func (s *Stage) Context() context.Context { return s.s.Context() }

// Partition returns the partition the stage runs for: the
// *pipeline.Partition the builder got.
func (s *Stage) Partition() *pipeline.Partition {
	p, _ := s.s.Partition().Public.(*pipeline.Partition)
	return p
}

// Done completes one reference of each ticket: the value reached an End,
// or otherwise needs no more work (a stage that ends the graph, a value
// written by a sink). A record commits once every reference to its ticket
// completed. Complete a value or pass it on, never both: a ticket with no
// reference left is not completed again, and Run stops with a
// *sluice.StageError wrapping [ErrTicketCompleted] (the partition's
// context is cancelled and nothing more of it is committed). Completions
// that arrive once the partition's graph is gone (a batch shared by
// several partitions completing late) are ignored.
func (s *Stage) Done(ts ...Ticket) { s.s.Done(engineTickets(ts)...) }

// Drop is [Stage.Done] for values the stage filtered out: it also counts
// them as filtered for the hooks (sluice.HookValuesFiltered).
func (s *Stage) Drop(ts ...Ticket) { s.s.Drop(engineTickets(ts)...) }

// Fail handles the error a user function returned for the value holding
// t; pass it every such error (Call's result). Fail(t, nil) is nil.
//
// For an error marked with sluice.Invalid it queues the records behind t
// for the partition's dead-letter goroutine, which delivers them in
// offset order (pipeline.WithDeadLetter) and then completes t, and returns
// nil at once: go on with the next value. Without a dead-letter
// destination it returns, as below, a *sluice.StageError wrapping
// sluice.ErrNoDeadLetter.
//
// For any other error it returns a *sluice.StageError naming the stage
// and the position of the value's first record; t is not completed, so
// nothing past that record is committed. The stage sends what finished
// before the failure, then returns that error from its run function,
// which stops Run.
//
// In share mode (a share group source) a value whose retries are used up
// has its records released for redelivery, and an invalid one without a
// dead-letter destination has them rejected: Fail then completes t,
// logs a warning and returns nil.
func (s *Stage) Fail(t Ticket, err error) error { return s.s.Fail(t.t, err) }

// Retry decides what happens after the stage's call number attempt (from
// 1) for the value holding t failed with err: the one retry loop every
// user function goes through ([Call] uses it). For a transient error
// within the stage's retry policy (StageSpec.Retry, else
// pipeline.WithRetry) it logs a warning naming the stage, the partition,
// the value's first offset, "attempt n/N", the delay and err (rate
// limited per stage and partition), waits the jittered backoff and
// returns true: call again. Otherwise it returns false and the error to
// pass to [Stage.Fail]: err itself for an Invalid or Permanent error or a
// panic, and when the partition started draining or its context ended
// (a retry never holds up a revoke, a loss or a shutdown; the value stays
// uncommitted); once the attempts are used up, err wrapped so that its
// text ends with "(failed after N attempts; ...)" (errors.Is and
// errors.As still see err). It blocks the calling goroutine for the
// backoff; calls for different values may overlap, from any goroutine
// of the stage.
func (s *Stage) Retry(t Ticket, err error, attempt int) (again bool, final error) {
	return s.s.Retry(t.t, err, attempt)
}

// Retain adds n references to t, for a value that became n+1 values, each
// passed on or completed on its own. Call it before passing any of them
// on: a downstream stage may complete the first before the next is sent.
// n of 0 or less does nothing. A t with no reference left stops Run with
// an error wrapping [ErrTicketCompleted].
func (s *Stage) Retain(t Ticket, n int) { s.s.Retain(t.t, n) }

// Join returns one ticket standing for all of ts, taking over the
// caller's reference to each: completing the joined ticket completes each
// of them (a batch). ts may be reused once Join returned. One of ts with
// no reference left stops Run with an error wrapping
// [ErrTicketCompleted].
func (s *Stage) Join(ts []Ticket) Ticket { return Ticket{s.s.Join(engineTickets(ts))} }

// Split turns the caller's reference to t, a joined ticket of exactly n
// tickets, back into one reference to each of them, in Join order, for a
// stage that hands a batch's values on one by one: it then completes or
// passes on each returned ticket instead of t, so that a value that fails
// concerns only its own records. Other references to t are unaffected.
// For any other t Split returns nil and changes nothing; a joined t with
// no reference left also stops Run with an error wrapping
// [ErrTicketCompleted].
func (s *Stage) Split(t Ticket, n int) []Ticket { return tickets(s.s.Split(t.t, n)) }

// Abort stops Run with err, as if the stage's run function had returned
// it: for a stage whose values complete on goroutines other than its own
// (a batch shared by several partitions), which cannot return the error.
// An error reported once the partition started being taken away (revoke,
// loss, shutdown) is ignored, as a returned one would be.
func (s *Stage) Abort(err error) { s.s.Abort(err) }

// Stopping reports whether the stage's partition is being revoked or is
// gone: its input stopped (a revoke or shutdown is draining it) or its
// context is done. A stage about to wait or retry for work that may no
// longer finish checks it.
func (s *Stage) Stopping() bool { return s.s.Stopping() }

// Probe returns a new [Probe] for one goroutine of the stage that calls
// user functions; call it from the run function, once per goroutine.
// Probes live as long as the graph.
func (s *Stage) Probe() *Probe { return &Probe{s.s.Probe()} }

// Observed reports whether some hook implements sluice.HookStageCall and
// so wants the timing of every call (see [Stage.Called]); when it is
// false, a stage reads no clock. [Call] checks it.
func (s *Stage) Observed() bool { return s.s.Observed() }

// Called reports one call of the stage's user function to the hooks that
// implement sluice.HookStageCall: it took d and returned err. [Call]
// reports each attempt; a stage calling user functions itself reports
// them when [Stage.Observed].
func (s *Stage) Called(d time.Duration, err error) { s.s.Called(d, err) }

// RecordOffset returns the offset of the one record behind t while that
// record is held (not committed yet); false for a joined ticket (a batch
// stands for several records), the zero Ticket, or a record that left.
func (s *Stage) RecordOffset(t Ticket) (int64, bool) { return s.s.RecordOffset(t.t) }

// Watermark returns where the partition would resume if it were
// reassigned once the references in done (one each, tickets of single
// records as RecordOffset takes) completed: the offset of the oldest
// record that would still be unfinished, or, when none would be, the
// offset after the newest record held; -1 before the partition's first
// record. It is for a stage that stores its partition's position in the
// transaction that completes done (sink/txsink): Watermark() is the
// position now. It may run ahead of what the source committed (commits go
// on the source's interval). It walks the records held, under the
// partition's lock: call it once per transaction, not per value.
func (s *Stage) Watermark(done ...Ticket) int64 { return s.s.Watermark(engineTickets(done)...) }

// Probe marks which value a stage goroutine is working on, so that the
// stuck detector (pipeline.WithStuckThreshold) can tell a value that stays
// in one stage too long. Create one per goroutine that calls user
// functions, with [Stage.Probe], and use it from that goroutine only.
// [Call] marks the value it calls the function for.
type Probe struct{ p *engine.Probe }

// Enter records that the probe's goroutine starts working on the value of
// t: one atomic store while the stuck detector is on, nothing when it is
// off.
func (p *Probe) Enter(t Ticket) { p.p.Enter(t.t) }

// Leave records that the probe's goroutine finished the value it entered;
// it costs what Enter does.
func (p *Probe) Leave() { p.p.Leave() }
