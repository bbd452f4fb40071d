// Package stages holds the typed combinators a [pipeline.Builder] wires
// into a partition's graph: Map, Filter, FlatMap, Pool, PoolByKey, Batch,
// BatchByWeight, Unbatch, Route (each value down one branch), Tee (every
// value down every branch), the terminal stages Each and Discard, and
// SharedBatcher (one batch for all partitions of a consumer).
//
// Every stage runs in its own goroutine(s) for the life of the partition,
// preserves offset order, passes values in chunks over bounded channels
// and completes each record's ticket exactly when the record needs no more
// work, so that the partition's committed offset only moves past records
// that reached an End, were filtered out or were dead-lettered. Stage
// functions receive the partition context: it is cancelled when the
// partition is lost or its drain times out, and functions must return
// promptly then. An error wrapped with [sluice.Invalid] dead-letters the
// record; any other error, or a panic, stops pipeline.Run with the stage's
// name and the record's position. On a graceful revoke or shutdown a stage
// finishes what it holds (Batch flushes) before its output closes.
//
// # Per partition or per consumer
//
// The builder runs once per assigned partition, so every stage it adds
// exists once per partition, and so does every limit given as an
// argument: Map and Each call one value at a time per partition, Pool's
// workers and PoolByKey's one-call-per-key hold within one partition. A
// consumer owning eight partitions with Pool(in, 16, fn) makes up to 128
// calls at once, and a key whose records are on two partitions is called
// from both at once. For limits across the whole consumer, create a
// [Limiter] (calls at once) or a [KeyLock] (one call at a time per key)
// once, before pipeline.Run, and give it as an option to Map, FlatMap,
// Pool, PoolByKey or Each in every graph. A limit the builder creates is
// one per partition: the build of the next graph of the topic fails
// saying so. [SharedBatcher] is the consumer-wide batch.
//
// # Options and misuse
//
// Options are typed by what they fit: [Name] and [Buffer] are [Option]s,
// for every stage; [Retry] is a [CallOption] only, for the stages calling
// a function of yours that can fail (Map, FlatMap, Pool, PoolByKey, Each,
// SharedBatcher, sink.Produce), and so are the limits [Limiter], [KeyLock]
// and [LockKey] (Map, FlatMap, Pool, PoolByKey and Each only; another
// stage given one fails the build). Giving Retry or a Limiter to Filter,
// Route, Tee, Batch, Unbatch or Discard does not compile; a key or a
// weight is an argument of PoolByKey, BatchByWeight and
// NewSharedBatcherByWeight, typed by the stream. A bad argument (a nil function, workers or a size below one, a
// negative maxWait, Route with no output) fails the build with a
// *sluice.BuildError naming the stage: never a panic in the builder.
//
// All stages are written on package pipeline/stagekit; docs/stages.md
// shows how to write a new one.
package stages
