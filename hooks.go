package sluice

import "time"

// Hook is anything that implements one or more of the Hook* interfaces
// of this package (HookPartitionAssigned, HookStageCall, ...), each of
// one method for one event. Register hooks with pipeline.WithHooks: Run
// checks once, when the option is applied, which events each hook
// handles, and calls it for those only. An event no hook handles costs nothing; in
// particular stages read the clock around user function calls only when
// some hook implements [HookStageCall]. Package metrics provides the
// Prometheus and health-check hooks.
//
// Every hook method is called synchronously by the goroutine doing the
// work, often concurrently with other calls of the same or other hook
// methods, so implementations must be safe for concurrent use and fast:
// count, do not block, do not call back into Run. Hooks are called in
// the order they were registered. Hooks must not panic: Run does not
// recover hook panics as such; one on a stage goroutine stops Run like a
// panic of that stage's function, one on any other goroutine (the poll
// loop, a partition's feeder or dead-letter goroutine, the stuck
// detector) crashes the program. The completion and admission hooks run
// on those too when they complete what an Each kept (see
// stagekit.Sink).
//
// New events may be added as new interfaces at any time; a hook keeps
// compiling and working, and simply does not see them.
//
// Hooks replace the Observer interface (and NopObserver, WithObserver) of
// earlier versions: rename each method M to OnM and pass the value to
// pipeline.WithHooks.
type Hook = any

// HookPartitionAssigned is called when a partition is assigned.
type HookPartitionAssigned interface {
	// OnPartitionAssigned: a graph was built for tp. Called from the
	// source's poll goroutine, before any record of tp is delivered.
	OnPartitionAssigned(tp TopicPartition)
}

// HookPartitionRevoked is called when a revoked partition finished
// draining.
type HookPartitionRevoked interface {
	// OnPartitionRevoked: tp's graph drained in drain (timedOut: the
	// drain timeout cut it short), its OnClose hooks ran, and its final
	// offset is about to be committed. Called once per revoke or
	// shutdown of tp, after every other event of that assignment of tp;
	// partitions revoked together drain on their own goroutines, so
	// calls for them run concurrently.
	OnPartitionRevoked(tp TopicPartition, drain time.Duration, timedOut bool)
}

// HookPartitionLost is called when a partition is lost.
type HookPartitionLost interface {
	// OnPartitionLost: tp's graph was cancelled and its OnClose hooks
	// ran; nothing more of tp is committed. Called after every other event
	// of that assignment of tp; partitions lost together are stopped on
	// their own goroutines, so calls for them run concurrently.
	OnPartitionLost(tp TopicPartition)
}

// HookPartitionPaused is called when backpressure pauses a partition.
type HookPartitionPaused interface {
	// OnPartitionPaused: tp holds too many records (WithPartitionQueue)
	// or the in-flight budget is used up, so the source stops fetching
	// it. Called from the source's poll goroutine, once per pause.
	OnPartitionPaused(tp TopicPartition)
}

// HookPartitionResumed is called when a paused partition resumes.
type HookPartitionResumed interface {
	// OnPartitionResumed: the pause of tp ended. Called from the
	// source's poll goroutine, after the OnPartitionPaused it ends. A
	// partition revoked or lost while paused gets no OnPartitionResumed.
	OnPartitionResumed(tp TopicPartition)
}

// HookRecordsDelivered is called when records enter a partition's graph.
type HookRecordsDelivered interface {
	// OnRecordsDelivered: n records of tp were admitted into its graph by
	// the in-flight budget. Called from the poll goroutine, or from the
	// goroutine whose completion made room for records that waited (a
	// stage's, or one that completed what an Each kept: the poll
	// goroutine, a partition's feeder or dead-letter goroutine).
	OnRecordsDelivered(tp TopicPartition, n int)
}

// HookRecordsCompleted is called when records become committable.
type HookRecordsCompleted interface {
	// OnRecordsCompleted: n records of tp became committable; next is
	// the offset the source will commit for tp. Called from a goroutine
	// that completed records of tp (a stage, a pool worker, a shared
	// batcher's writer, a dead-letter goroutine, or, when they complete
	// what an Each kept (stagekit.Sink), the poll goroutine and a
	// partition's feeder); for one partition the
	// calls come one at a time, with next increasing: records that
	// complete during a call are reported by the next one, from the
	// goroutine of the call before it. Records are counted here before
	// they leave the in-flight budget, and the source commits only an
	// offset a call that returned passed as next, so no commit of them
	// is seen before the call that reports them.
	OnRecordsCompleted(tp TopicPartition, n int, next int64)
}

// HookValuesFiltered is called when a stage drops values.
type HookValuesFiltered interface {
	// OnValuesFiltered: stage dropped n values of tp (stages.Filter),
	// which complete without reaching an End. Called from the stage's
	// goroutine.
	OnValuesFiltered(tp TopicPartition, stage string, n int)
}

// HookRecordDeadLettered is called when a record was dead-lettered.
type HookRecordDeadLettered interface {
	// OnRecordDeadLettered: a record of tp that stage found invalid was
	// delivered to the dead-letter function (WithDeadLetter). Called from
	// tp's dead-letter goroutine or, for the Kafka destinations, the
	// goroutine that takes their delivery reports; for one partition the
	// calls come one at a time, in offset order, except that a dead
	// letter delivered on a retry comes after those delivered meanwhile.
	OnRecordDeadLettered(tp TopicPartition, stage string)
}

// HookInFlight is called when the in-flight totals change.
type HookInFlight interface {
	// OnInFlight: records and their bytes (key, value and
	// pipeline.RecordOverhead each, as pipeline.WithMaxInFlightBytes
	// counts them) admitted but not yet committable, across all
	// partitions, after a change. Called from a goroutine that changed
	// them, one call at a time; the last call reports the totals as they
	// are after the last change. Changes made during a call are reported
	// together by the next, so the values are a gauge's, not a sequence.
	OnInFlight(records, bytes int64)
}

// HookStageCall is called after every call of a stage's user function.
// Implementing it makes every stage read the clock twice per call; the
// other hooks cost no clock reads.
type HookStageCall interface {
	// OnStageCall: one call (one attempt) of stage's user function for a
	// value of tp took d and returned err (nil on success; a
	// *PanicError for a panic). Every function a stage exists to call is
	// reported: the shipped stages', sink.Produce's message function and
	// the shared batcher's write. Called from the goroutine that made the
	// call, before a retry is decided.
	OnStageCall(stage string, tp TopicPartition, d time.Duration, err error)
}

// HookStageRetry is called before a failed call is retried.
type HookStageRetry interface {
	// OnStageRetry: a call of stage's function for a value of tp failed
	// with the transient err and is retried after delay; attempt counts
	// from 1 for the first retry. Retries of a dead-letter delivery are
	// reported with stage "NAME (dead letter)". Called from the goroutine
	// that retries, before it waits.
	OnStageRetry(stage string, tp TopicPartition, attempt int, delay time.Duration, err error)
}

// HookStageFailed is called when a stage error stops Run.
type HookStageFailed interface {
	// OnStageFailed: err (a *StageError) of stage for tp stops Run, or,
	// during shutdown, is one of the errors Run will return. Errors of a
	// partition being revoked or lost are not reported. Called from the
	// goroutine that failed.
	OnStageFailed(stage string, tp TopicPartition, err error)
}

// HookStuck is called when a value stays too long in a stage.
type HookStuck interface {
	// OnStuck: one value of tp (its first record at offset) has been in
	// stage's function for at least since (WithStuckThreshold), once per
	// value. It comes before the OnRecordsCompleted whose next passes
	// offset, and before OnPartitionRevoked or OnPartitionLost of tp, so
	// a hook can clear its mark on either. Called from the stuck
	// detector's goroutine with a lock of tp's offset accounting held:
	// return at once.
	OnStuck(stage string, tp TopicPartition, offset int64, since time.Duration)
}

// HookPolled is called after every poll of the source.
type HookPolled interface {
	// OnPolled: the source's poll loop completed a poll at at. Called
	// from the poll goroutine.
	OnPolled(at time.Time)
}

// HookJoined is called when the consumer joins its group.
type HookJoined interface {
	// OnJoined: the consumer became a member of its group (again, after
	// losing its membership). Called from the poll goroutine.
	OnJoined()
}

// HookCommitted is called after every offset commit.
type HookCommitted interface {
	// OnCommitted: the source committed offs; took is how long it took
	// (0 when the source does not know it, as for librdkafka's background
	// commits) and err its failure (nil on success). Called from the
	// source's goroutine; offs must not be kept or changed.
	OnCommitted(offs []Offset, took time.Duration, err error)
}

// HookHighWatermark is called when the source learns a partition's high
// watermark.
type HookHighWatermark interface {
	// OnHighWatermark: high is the newest known high watermark of tp (the
	// offset the next produced record will get). Called from the poll
	// goroutine.
	OnHighWatermark(tp TopicPartition, high int64)
}
