package pipeline

import "github.com/sluice-go/sluice/internal/engine"

// Observer receives what happens inside [Run], for metrics, health checks
// and tracing. Register observers with [WithObserver]; package metrics
// adapts them to Prometheus. Methods are called synchronously from the
// goroutines doing the work (the poll loop, stage goroutines), often
// concurrently, so implementations must be safe for concurrent use and
// fast: count, do not block. Embed [NopObserver] to implement only some.
// It is an interface with these methods:
//
//	// Partitions (poll goroutine).
//	PartitionAssigned(tp TopicPartition)     // a graph was built for tp
//	PartitionRevoked(tp TopicPartition, drain time.Duration, timedOut bool)
//	    // tp's graph drained in drain (timedOut: the drain timeout cut it
//	    // short) and its final offset is about to be committed
//	PartitionLost(tp TopicPartition)         // tp's graph was cancelled without committing
//	PartitionPaused(tp TopicPartition)       // backpressure on tp started
//	PartitionResumed(tp TopicPartition)      // and ended
//
//	// Records.
//	RecordsDelivered(tp TopicPartition, n int)
//	    // n records of tp were admitted into its graph by the in-flight budget
//	RecordsCompleted(tp TopicPartition, n int, next int64)
//	    // n records of tp became committable; next is the offset the source will commit
//	ValuesFiltered(tp TopicPartition, stage string, n int) // a stage dropped n values (stages.Filter)
//	RecordDeadLettered(tp TopicPartition, stage string)    // a record went to the dead-letter destination
//	InFlight(records, bytes int64)
//	    // records and key+value bytes admitted but not yet committable, across
//	    // all partitions, after a change (calls may arrive out of order)
//
//	// Stages.
//	StageCall(stage string, tp TopicPartition, d time.Duration, err error)
//	    // one call of a stage's user function took d and returned err (nil on success)
//	StageRetry(stage string, tp TopicPartition, attempt int, delay time.Duration, err error)
//	    // a call failed with a transient err and is retried after delay
//	    // (attempt counts from 1 for the first retry)
//	StageFailed(stage string, tp TopicPartition, err error) // a stage error stops Run
//	Stuck(stage string, tp TopicPartition, offset int64, since time.Duration)
//	    // one value of tp (offset) has been in stage for at least since (once
//	    // per value, see WithStuckThreshold); it comes before the
//	    // RecordsCompleted whose next passes offset and before PartitionRevoked
//	    // or PartitionLost of tp; it is called with a lock of tp's offset
//	    // accounting held: return at once
//
//	// What only the source sees.
//	Polled(at time.Time)  // the poll loop completed a poll
//	Joined()              // the consumer became a member of its group
//	Committed(offs []Offset, took time.Duration, err error)
//	    // the source committed offs; took is 0 when the source does not know
//	    // it (librdkafka's background commits)
//	HighWatermark(tp TopicPartition, high int64) // the newest known high watermark of tp
type Observer = engine.Observer

// NopObserver is an empty struct implementing every [Observer] method as a
// no-op; embed it to implement only the methods you need.
type NopObserver = engine.NopObserver

// WithObserver adds an observer of Run's events (metrics, health). It may
// be given several times; observers are called in order.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o == nil {
			c.bad("WithObserver(nil): pass an observer")
			return
		}
		c.Observers = append(c.Observers, o)
	}
}
