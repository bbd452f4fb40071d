package sink

import (
	"context"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
)

// Headers added to every dead letter, next to the original headers (the
// pipeline.DeadLetterHeader* constants).
const (
	HeaderTopic     = pipeline.DeadLetterHeaderTopic
	HeaderPartition = pipeline.DeadLetterHeaderPartition
	HeaderOffset    = pipeline.DeadLetterHeaderOffset
	HeaderError     = pipeline.DeadLetterHeaderError
	HeaderStage     = pipeline.DeadLetterHeaderStage
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter: it
// produces each invalid record to topic with its key, value and headers
// untouched, plus the sluice.dlq.* headers naming the original topic,
// partition, offset, the error text and the stage. Run calls it from each
// partition's dead-letter goroutine, so calls for different partitions
// overlap. Within Run a call returns as soon as librdkafka took the
// message, and Run counts the record's offset as done only once the
// delivery report succeeded (or fails it as below if it did not): a
// partition's dead letters go out in offset order without waiting for
// each other's reports, up to 1024 in flight, and the offset commits only
// after the dead letter is stored. Called outside Run, or when Run
// retries a failed dead letter, a call returns only once the delivery
// report arrived (or Close gave up on the message). A delivery failure is
// returned (and stops Run: a bad record is never dropped silently). A
// full producer queue is waited out. Failures that cannot heal are
// marked pipeline.Permanent, so Run stops at once: the producer closed
// ([ErrClosed]) or failed fatally, a message too large, an unknown topic,
// bad configuration or credentials. Others (a delivery that timed out)
// are retried under Run's retry policy, once the reports of the dead
// letters in flight with it arrived. An empty topic fails every call with
// a permanent error.
func (p *Producer) DeadLetter(topic string) func(context.Context, pipeline.DeadLetter) error {
	return produce.DeadLetter(client{p}, p.tr, "sink: Producer.DeadLetter", topic)
}
