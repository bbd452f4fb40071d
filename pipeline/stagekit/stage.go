package stagekit

import "github.com/sluice-go/sluice/internal/engine"

// Stage is a running stage's handle on its partition: its context and the
// ticket operations that drive commits. Its methods may be called from any
// goroutine the stage runs:
//
//   - Name() string: the stage's name.
//   - Context() context.Context: the partition's context, cancelled when
//     the partition is lost, when its drain times out, and after it
//     drained on revoke.
//   - Partition() *pipeline.Partition: the partition the stage runs for.
//   - Done(ts ...Ticket): completes one reference of each ticket: the
//     value reached an End, was filtered out, or otherwise needs no more
//     work. A ticket with no reference left is not completed again: Run
//     stops with an error wrapping [ErrTicketCompleted].
//   - Drop(ts ...Ticket): like Done, for values the stage filtered out;
//     counted as filtered for hooks (sluice.HookValuesFiltered).
//   - Fail(t Ticket, err error) error: handles the error of a user function
//     for the value holding t. For an error marked with sluice.Invalid
//     it queues the records behind t for the partition's dead-letter
//     goroutine (which delivers them in offset order, then completes t)
//     and returns nil at once. For any other error it returns a
//     *sluice.StageError naming the stage and the record's position,
//     which the stage must return; t is not completed, so nothing past the
//     record is committed. Fail(t, nil) is nil.
//   - Retry(t Ticket, err error, attempt int) (again bool, final error):
//     the one retry loop. After call number attempt (from 1) for the value
//     holding t failed with err, for a transient error within the stage's
//     policy it logs a warning (stage, partition, offset, attempt n/N,
//     delay, err), waits the backoff delay and returns true (call again);
//     false for an Invalid or Permanent error or a panic, once the
//     attempts are spent (final then says "failed after N attempts" and
//     suggests sluice.Invalid and sluice.Permanent), or when the
//     partition starts draining meanwhile. [Call] uses it; a stage calling
//     it itself passes final to Fail on false.
//   - Retain(t Ticket, n int): adds n references to t, for a value that
//     became n+1 values (each completed on its own). Call it before
//     passing any of them on. Retain, Join and Split of a ticket with no
//     reference left stop Run ([ErrTicketCompleted]).
//   - Join(ts []Ticket) Ticket: one ticket standing for all of ts (which
//     it takes over); completing it completes each of them (batches).
//   - Split(t Ticket, n int) []Ticket: turns the caller's reference to a
//     joined ticket of exactly n tickets back into one reference to each,
//     in Join order (a batch handed on value by value); nil, changing
//     nothing, for any other t.
//   - Abort(err error): stops Run with err as if the stage had returned it,
//     for values completed on goroutines other than the stage's own;
//     ignored once the partition started being taken away.
//   - Stopping() bool: whether the partition is being revoked or is gone
//     (its input stopped or its context is done).
//   - Probe() *Probe: a new [Probe] for one goroutine of the stage.
//   - Observed() bool and Called(d time.Duration, err error): whether
//     some hook implements sluice.HookStageCall (else no clock is
//     read), and the report of one call (d, err) to those hooks.
//     [Call] does both.
//   - RecordOffset(t Ticket) (int64, bool): the offset of the one record
//     behind t while it is held; false for a joined ticket or a record
//     that left.
//   - Watermark(done ...Ticket) int64: where the partition would resume
//     once the references in done completed: the oldest record that would
//     still be unfinished, else the offset after the newest held; -1
//     before the first record. For a stage that stores its partition's
//     position in the transaction that completes done (sink/txsink).
type Stage = engine.Stage

// Probe marks which value a stage goroutine is working on, so the stuck
// detector (pipeline.WithStuckThreshold) can tell a value that stays in one
// stage too long. Create one per goroutine that calls user functions,
// with Stage.Probe; probes live as long as the graph. Its methods are
// Enter(t Ticket), the goroutine starts working on the value of t, and
// Leave(), it finished; each costs one atomic store. [Call] calls them.
type Probe = engine.Probe
