// Package stagekit is for writing a new kind of stage: the API that
// package stages, sink.Produce and any stage of your own are built on.
// Users who only wire the shipped stages into a [pipeline.Builder] never
// need it.
//
// # Start with the loop helpers
//
// [Transform] (a value in, zero or more out) and [Sink] (terminal) are a
// whole stage: you give the function to call per value, the kit runs the
// loop and does everything the contract below asks (see ExampleTransform
// and docs/stages.md). A stateful or timed stage (a batch, a pool of
// workers, asynchronous completions) is added with [AddStage], [AddFanOut]
// or [AddEnd] and runs its input with [RunLoop] (or [ForEachChunk]): the
// kit owns the receive loop, the cancellation checks and the release of
// chunks; the stage gives callbacks for a chunk, the drain, a [Timer], a
// channel of events and a wake-up signal. A constructor reports a bad
// argument in [StageSpec].Problem (a build error naming the stage); a
// consumer-wide object declares itself with [Shared] (one batch for the
// partitions of one Run), or with a [Use] (a limit that may serve several
// stages and Runs).
//
// A stage is added to a partition's graph from inside the builder with
// [AddStage] (one input, one output), [AddFanOut] (one input, n outputs)
// or [AddEnd] (terminal). Its run function starts in its own goroutine
// once the builder returned, and runs for the life of the partition.
//
// # The contract of a stage
//
//   - Read the [Inlet] until Recv returns false, then return nil: the
//     input closed (a graceful revoke or shutdown drained everything
//     upstream) or the partition's context is done. Returning closes the
//     outputs, so flush what the stage holds first (a batch) and Send it.
//   - Values travel in chunks of [Item]s. Release every received chunk
//     once its values are no longer referenced, and fill output chunks
//     from [Outlet.Buffer].
//   - Every value carries a [Ticket] standing for the records it came
//     from. Complete each reference exactly once: [Stage.Done] when the
//     value needs no more work (it reached the end, or the stage ends the
//     graph), [Stage.Drop] when it is filtered out, or pass the ticket on
//     with the value(s) derived from it ([Stage.Retain] first when one value
//     becomes several, [Stage.Join] for a batch, [Stage.Split] to hand a batch
//     back value by value). A record commits once all references to its
//     ticket completed; a forgotten ticket holds its partition's commit
//     back forever.
//   - Complete a value or pass it on, never both, and never complete one
//     reference twice: a completed reference may let the record commit at
//     once, while the value is still in the graph. The runtime refuses a
//     ticket with no reference left: [Outlet.Send] does not send a chunk
//     holding one, and a second completion (a Done, Drop or Fail, or the
//     completion of a batch's joined ticket) frees nothing twice; Retain,
//     Join and Split refuse one too. Each stops Run with a
//     *sluice.StageError wrapping [ErrTicketCompleted] that names the
//     stage that used the ticket, the partition and, while its record is
//     still held, the offset; the partition's context is cancelled, and
//     from then on nothing more of the partition is committed. The check
//     cannot undo a commit: a record completed too early, with no
//     unfinished record before it, may be committed before the misuse is
//     seen.
//   - Call user functions through [Call] (panic capture, stuck detection,
//     timing, retries), and the small pure functions a stage is configured
//     with through [Protect].
//   - Pass a function's error to [Stage.Fail]. An error marked with
//     sluice.Invalid dead-letters the value's records and Fail returns
//     nil: go on. For any other error Fail returns a *sluice.StageError:
//     Send what finished before it, then return that error, which stops
//     Run. A panic in run stops Run too.
//   - Cancellation: [Stage.Context] is the partition's context. When it is
//     done (the partition was lost, or its drain timed out), stop at once:
//     Recv and Send return false, values in hand are dropped uncompleted
//     (they are not committed) and Call makes no more calls. [RunLoop]
//     does this; a stage that selects on [Inlet.C] itself must select on the
//     context too.
//
// # Revoke, loss and shutdown
//
// On a graceful revoke, and at shutdown, the input of the graph stops:
// stages drain what is in flight (retries are interrupted, their values
// stay uncommitted), then their inputs close one after the other. The drain
// has a deadline (pipeline.WithDrainTimeout); past it, and at once when the
// partition is lost, the context is cancelled. Run waits for every stage
// goroutine to return before it lets the partition go, then runs its
// OnClose hooks.
package stagekit
