// Package stages holds the typed combinators a [pipeline.Builder] wires
// into a partition's graph: Map, Filter, FlatMap, Pool, Batch, Unbatch,
// Route, and the terminal stages Each and Discard.
//
// Every stage runs in its own goroutine(s) for the life of the partition,
// preserves offset order, passes values in chunks over bounded channels
// and completes each record's ticket exactly when the record needs no more
// work, so that the partition's committed offset only moves past records
// that reached an End, were filtered out or were dead-lettered. Stage
// functions receive the partition context: it is cancelled when the
// partition is lost or its drain times out, and functions must return
// promptly then. An error wrapped with [pipeline.Invalid] dead-letters the
// record; any other error, or a panic, stops pipeline.Run with the stage's
// name and the record's position. On a graceful revoke or shutdown a stage
// finishes what it holds (Batch flushes) before its output closes.
package stages
