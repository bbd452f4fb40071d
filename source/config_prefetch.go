package source

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// The source sizes librdkafka's prefetch from the runtime's in-flight byte
// budget (pipeline.WithMaxInFlightBytes), so that what librdkafka fetched
// and Run has not polled yet stays within a fraction of the budget plus a
// constant, however many partitions the source owns.
//
// With the high-level consumer every partition's fetch queue forwards to
// the one consumer queue, and librdkafka compares its thresholds with that
// queue (rd_kafka_q_len and rd_kafka_q_size follow the forward;
// rdkafka_fetcher.c, rd_kafka_toppar_fetch_decide, librdkafka v2.11): a
// partition is fetched while the whole queue holds fewer than
// queued.min.messages messages and queued.max.messages.kbytes of key and
// value. One fetch response per broker can overshoot that by up to
// fetch.max.bytes (fetch.message.max.bytes per partition), and librdkafka
// keeps a response's buffer until the last of its messages was polled.
// The defaults (100000 messages, 64 MiB, 50 MiB per response, 1 MiB per
// partition) cost hundreds of MiB of C memory that no Go limit sees.
//
// A paused partition's prefetched messages are dropped (librdkafka bumps
// the partition's version) and fetched again on resume, so a smaller
// queue also wastes less on each pause.
//
// The queue is small on purpose: a 256th of the budget, so 1 MiB at the
// default budget. A queue larger than what the poll loop takes between
// two fetch responses buys no throughput; it only lets the poll loop run
// further ahead of the stages, so records wait longer (in librdkafka's
// queue, then in the graph up to the whole budget), are cold in the CPU
// caches when a stage reads them, and swell the heap the collector
// scans. docs/performance.md ("librdkafka's prefetch queue") has the
// measurements.
//
// The source sets queued.max.messages.kbytes and queued.min.messages;
// librdkafka then lowers fetch.max.bytes to the queue's size itself, but
// not below message.max.bytes (rdkafka_conf.c, rd_kafka_conf_finalize),
// unless Overrides set it.
const (
	// queueShare: the consumer queue holds at most budget/queueShare
	// bytes of keys and values.
	queueShare = 256
	// minQueueBytes keeps tiny budgets fetching; a broker still returns
	// a batch larger than the request's limit, so progress never stalls.
	minQueueBytes = 1 << 20
	// maxQueueBytes is librdkafka's default queued.max.messages.kbytes
	// (64 MiB): the queue never grows past it.
	maxQueueBytes = 64 << 20
	// queueRecordBytes converts the queue's bytes into queued.min.messages
	// (librdkafka's own bookkeeping per message is not in its byte count):
	// records of this size fill the byte limit and the count together.
	queueRecordBytes = 128
	// minQueueMessages and maxQueueMessages bound queued.min.messages;
	// the upper bound is librdkafka's default.
	minQueueMessages = 1000
	maxQueueMessages = 100000
)

// budgetOf returns g's in-flight byte budget (Group.MaxInFlightBytes), or
// pipeline.DefaultMaxInFlightBytes for a Group that tells none.
func budgetOf(g sluice.Group) int64 {
	if b := g.MaxInFlightBytes(); b > 0 {
		return b
	}
	return pipeline.DefaultMaxInFlightBytes
}

// prefetchSizes returns queued.max.messages.kbytes and queued.min.messages
// for an in-flight byte budget.
func prefetchSizes(budget int64) (queueKiB, queueMessages int) {
	queue := min(max(budget/queueShare, minQueueBytes), maxQueueBytes)
	return int(queue >> 10), int(min(max(queue/queueRecordBytes, minQueueMessages), maxQueueMessages))
}

// prefetch sets the properties of prefetchSizes(budget) in m, except
// those set in Overrides, which are kept.
func (c Config) prefetch(m kafka.ConfigMap, budget int64) {
	queueKiB, queueMessages := prefetchSizes(budget)
	if _, ok := c.Overrides["queued.max.messages.kbytes"]; !ok {
		m["queued.max.messages.kbytes"] = queueKiB
	}
	if _, ok := c.Overrides["queued.min.messages"]; !ok {
		m["queued.min.messages"] = queueMessages
	}
}
