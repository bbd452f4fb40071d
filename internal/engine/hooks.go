package engine

import (
	"time"
)

// Observer receives what happens inside [Run], for metrics, health checks
// and tracing. Register observers with pipeline.WithObserver; package metrics
// adapts them to Prometheus. Methods are called synchronously from the
// goroutines doing the work (the poll loop, stage goroutines), often
// concurrently, so implementations must be safe for concurrent use and
// fast: count, do not block. Embed [NopObserver] to implement only some.
type Observer interface {
	// PartitionAssigned: a graph was built for tp.
	PartitionAssigned(tp TopicPartition)
	// PartitionRevoked: tp's graph drained (timedOut: the drain timeout
	// cut it short) in drain and its final offset is about to be committed.
	PartitionRevoked(tp TopicPartition, drain time.Duration, timedOut bool)
	// PartitionLost: tp's graph was cancelled without committing.
	PartitionLost(tp TopicPartition)
	// PartitionPaused and PartitionResumed: backpressure on tp started
	// and ended.
	PartitionPaused(tp TopicPartition)
	PartitionResumed(tp TopicPartition)

	// RecordsDelivered: n records of tp the source delivered were
	// admitted into its graph by the in-flight budget.
	RecordsDelivered(tp TopicPartition, n int)
	// RecordsCompleted: n records of tp became committable; next is the
	// offset the source will commit.
	RecordsCompleted(tp TopicPartition, n int, next int64)
	// ValuesFiltered: a stage dropped n values of tp (stages.Filter).
	ValuesFiltered(tp TopicPartition, stage string, n int)
	// RecordDeadLettered: a record of tp was delivered to the dead-letter
	// destination.
	RecordDeadLettered(tp TopicPartition, stage string)
	// InFlight: records and key+value bytes admitted but not yet
	// committable, across all partitions, after a change (calls from
	// different goroutines may arrive out of order).
	InFlight(records, bytes int64)

	// StageCall: one call of a stage's user function for a value of tp
	// took d and returned err (nil on success).
	StageCall(stage string, tp TopicPartition, d time.Duration, err error)
	// StageRetry: a stage's call failed with a transient err and is
	// retried after delay (attempt counts from 1 for the first retry).
	StageRetry(stage string, tp TopicPartition, attempt int, delay time.Duration, err error)
	// StageFailed: a stage error stops Run.
	StageFailed(stage string, tp TopicPartition, err error)
	// Stuck: one value of tp (offset) has been in stage for at least
	// since (reported once per value; see pipeline.WithStuckThreshold). It comes
	// before the RecordsCompleted whose next passes offset, and before
	// PartitionRevoked or PartitionLost of tp, so an observer can clear
	// its mark on either. It is called with a lock of tp's offset
	// accounting held: return at once.
	Stuck(stage string, tp TopicPartition, offset int64, since time.Duration)

	// Polled: the source's poll loop completed a poll.
	Polled(at time.Time)
	// Joined: the consumer became a member of its group.
	Joined()
	// Committed: the source committed offs (took, err: its outcome; took
	// is 0 when the source does not know it, as for librdkafka's
	// background commits).
	Committed(offs []Offset, took time.Duration, err error)
	// HighWatermark: the newest known high watermark of tp.
	HighWatermark(tp TopicPartition, high int64)
}

// NopObserver implements every [Observer] method as a no-op; embed it to
// implement only the methods you need.
type NopObserver struct{}

// The methods of NopObserver do nothing.
func (NopObserver) PartitionAssigned(TopicPartition)                             {}
func (NopObserver) PartitionRevoked(TopicPartition, time.Duration, bool)         {}
func (NopObserver) PartitionLost(TopicPartition)                                 {}
func (NopObserver) PartitionPaused(TopicPartition)                               {}
func (NopObserver) PartitionResumed(TopicPartition)                              {}
func (NopObserver) RecordsDelivered(TopicPartition, int)                         {}
func (NopObserver) RecordsCompleted(TopicPartition, int, int64)                  {}
func (NopObserver) ValuesFiltered(TopicPartition, string, int)                   {}
func (NopObserver) RecordDeadLettered(TopicPartition, string)                    {}
func (NopObserver) InFlight(int64, int64)                                        {}
func (NopObserver) StageCall(string, TopicPartition, time.Duration, error)       {}
func (NopObserver) StageRetry(string, TopicPartition, int, time.Duration, error) {}
func (NopObserver) StageFailed(string, TopicPartition, error)                    {}
func (NopObserver) Stuck(string, TopicPartition, int64, time.Duration)           {}
func (NopObserver) Polled(time.Time)                                             {}
func (NopObserver) Joined()                                                      {}
func (NopObserver) Committed([]Offset, time.Duration, error)                     {}
func (NopObserver) HighWatermark(TopicPartition, int64)                          {}

// multiObserver fans every event out to several observers.
type multiObserver []Observer

func (m multiObserver) PartitionAssigned(tp TopicPartition) {
	for _, o := range m {
		o.PartitionAssigned(tp)
	}
}
func (m multiObserver) PartitionRevoked(tp TopicPartition, d time.Duration, timedOut bool) {
	for _, o := range m {
		o.PartitionRevoked(tp, d, timedOut)
	}
}
func (m multiObserver) PartitionLost(tp TopicPartition) {
	for _, o := range m {
		o.PartitionLost(tp)
	}
}
func (m multiObserver) PartitionPaused(tp TopicPartition) {
	for _, o := range m {
		o.PartitionPaused(tp)
	}
}
func (m multiObserver) PartitionResumed(tp TopicPartition) {
	for _, o := range m {
		o.PartitionResumed(tp)
	}
}
func (m multiObserver) RecordsDelivered(tp TopicPartition, n int) {
	for _, o := range m {
		o.RecordsDelivered(tp, n)
	}
}
func (m multiObserver) RecordsCompleted(tp TopicPartition, n int, next int64) {
	for _, o := range m {
		o.RecordsCompleted(tp, n, next)
	}
}
func (m multiObserver) ValuesFiltered(tp TopicPartition, stage string, n int) {
	for _, o := range m {
		o.ValuesFiltered(tp, stage, n)
	}
}
func (m multiObserver) RecordDeadLettered(tp TopicPartition, stage string) {
	for _, o := range m {
		o.RecordDeadLettered(tp, stage)
	}
}
func (m multiObserver) InFlight(records, bytes int64) {
	for _, o := range m {
		o.InFlight(records, bytes)
	}
}
func (m multiObserver) StageCall(stage string, tp TopicPartition, d time.Duration, err error) {
	for _, o := range m {
		o.StageCall(stage, tp, d, err)
	}
}
func (m multiObserver) StageRetry(stage string, tp TopicPartition, attempt int, delay time.Duration, err error) {
	for _, o := range m {
		o.StageRetry(stage, tp, attempt, delay, err)
	}
}
func (m multiObserver) StageFailed(stage string, tp TopicPartition, err error) {
	for _, o := range m {
		o.StageFailed(stage, tp, err)
	}
}
func (m multiObserver) Stuck(stage string, tp TopicPartition, offset int64, since time.Duration) {
	for _, o := range m {
		o.Stuck(stage, tp, offset, since)
	}
}
func (m multiObserver) Polled(at time.Time) {
	for _, o := range m {
		o.Polled(at)
	}
}
func (m multiObserver) Joined() {
	for _, o := range m {
		o.Joined()
	}
}
func (m multiObserver) Committed(offs []Offset, took time.Duration, err error) {
	for _, o := range m {
		o.Committed(offs, took, err)
	}
}
func (m multiObserver) HighWatermark(tp TopicPartition, high int64) {
	for _, o := range m {
		o.HighWatermark(tp, high)
	}
}

// observerOf returns one Observer for the configured list.
func observerOf(os []Observer) Observer {
	switch len(os) {
	case 0:
		return NopObserver{}
	case 1:
		return os[0]
	}
	return multiObserver(os)
}
