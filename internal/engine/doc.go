// Package engine is Sluice's runtime: everything pipeline.Run does behind
// the user API of package pipeline, and the plumbing that package
// pipeline/stagekit exposes to stage authors.
//
// One [Run] creates a [Group] (group.go), which the source drives from its
// poll goroutine. The Group owns the assignments (assignments.go: which
// partitions are owned and what assign, revoke, loss and shutdown do to
// their graphs), the in-flight budget that pauses and resumes partitions
// (backpressure.go) and the first fatal error. Each owned partition runs
// one graph (graph.go): the builder's stages (stage.go) joined by bounded
// channels of chunks with free lists (edges.go), the ticket tracker that
// computes the committable offset (commits.go, tickets.go), the
// partition's dead-letter queue and limit (deadletters.go,
// deadletter_limit.go), retries with backoff (retries.go), the stuck
// watchdog (stuck.go), the feeder's pacing to the drain timeout (pace.go)
// and the bounded waits for user code that ignores its context
// (abandon.go). The data types users see (records, offsets, errors, the
// hook interfaces) are package sluice's, the module's root package, which
// imports nothing of the project; vocab.go aliases them for the engine's
// code. The types whose methods need the engine's internals (the
// Partition and Stream a graph is built from, the End it returns, and
// the stage kit's Stage, Ticket, Item, Inlet, Outlet, Probe and Shared)
// are defined here; pipeline and pipeline/stagekit define their public
// types on them (structs holding them, or types defined on them) and
// declare each method there. The event hooks (hooks.go) are the
// configured hooks sorted by event once per Run, by sluice's Hook*
// interfaces.
//
// Nothing here validates options or fills defaults: package pipeline does,
// and hands a complete [Config] to Run.
package engine
