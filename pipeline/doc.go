// Package pipeline runs a Kafka consumer as one typed graph of stages per
// assigned partition, and owns everything around it: assignment, commits,
// backpressure, draining, dead letters and errors.
//
// # The user's part
//
// A [Builder] wires a graph for one partition from its input [Stream] of
// [sluice.Record]s, with the stages of package stages, and returns the graph's
// [End]. [Run] calls it every time a partition is assigned. Stage functions
// get the partition's context and return errors: a plain error is transient
// and retried ([WithRetry], default [sluice.DefaultRetry]: 8 attempts, at most
// 11.3 s of backoff, each retry logged as a warning), [sluice.Invalid] marks
// bad input for the dead-letter destination ([WithDeadLetter]),
// [sluice.Permanent] stops Run at once. Delivery is at least once: side
// effects must be idempotent.
//
// # Lifecycle of a partition
//
//   - Assign: the builder runs once, on the source's poll goroutine; the
//     stages start when it returns.
//   - Running: records flow through bounded channels in chunks, in offset
//     order. Every record has a ticket; a record is done when every value
//     derived from it reached an End, was filtered out or was
//     dead-lettered, and the partition's committable offset is 1 + the
//     highest offset whose predecessors are all done. The source commits it
//     on its interval.
//   - Backpressure: when a partition holds too many records
//     ([WithPartitionQueue]) or the whole consumer does ([WithMaxInFlight],
//     [WithMaxInFlightBytes]), the source pauses the partition and keeps
//     polling; it resumes once it holds at most half of its queue and the
//     whole consumer holds at most three quarters of each global limit,
//     with nothing waiting for admission. The global limits are caps: what
//     does not fit waits for admission, first come first served, and
//     paused partitions resume in turn, only as many at once as the free
//     budget has room for one delivery each.
//   - Graceful revoke: input stops, the graph drains (Batch flushes,
//     retries are interrupted) within [WithDrainTimeout], then the
//     [Partition.OnClose] hooks run, the partition's context is cancelled
//     and the final offset is committed before the revoke is acknowledged.
//     A drain that times out cancels the context and commits only what
//     finished.
//   - Lost partition: the context is cancelled at once; nothing more is
//     committed.
//   - Functions must return once their context is done: one still running
//     a quarter of the drain timeout (at least 1 s) later (an OnClose
//     hook: after its own context expired) is abandoned and Run stops with
//     [sluice.ErrAbandoned], so that Run always returns.
//   - Shutdown (Run's context cancelled): every partition is revoked
//     gracefully and Run returns nil. After a stage error, Run shuts down
//     the same way and returns the error, naming the stage and the offset.
//
// Run returns only after every goroutine it started has exited, except those
// of functions it abandoned. Panics in stage functions, builders, OnClose
// hooks and the dead-letter function are recovered and reported as a
// [sluice.PanicError] with their stack (inside a [sluice.StageError], or a
// [sluice.BuildError] for a builder; errors.As finds it); they stop Run like
// any permanent error. [Run] lists every error it returns.
//
// # Sources and hooks
//
// A [sluice.Source] drives Run through the [sluice.Group] interface from one
// poll goroutine: source.NewSource (librdkafka), franz.NewSource and
// franz.NewShareSource (franz-go), follow.New (a follower wrapping one of
// them) or, in tests, testkit.NewFake. [sluice.Hook]s ([WithHooks]) see the
// events they handle, for metrics and health checks; package metrics provides
// Prometheus and health hooks.
//
// # Writing stages
//
// A new kind of stage is written on package
// [github.com/sluice-go/sluice/pipeline/stagekit], as package stages and
// sink.Produce are: it adds stages to a graph and gives them their
// input, output, tickets (which drive commits) and the one path for
// calling user functions. Users who only compose stages never need it.
package pipeline
