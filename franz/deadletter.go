package franz

import (
	"context"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter: it
// produces each invalid record to topic with its key, value, timestamp and
// headers untouched, plus the pipeline.DeadLetterHeader* (sluice.dlq.*)
// headers naming the original topic, partition, offset, the error text
// and the stage. Run calls it from each partition's dead-letter goroutine,
// so calls for different partitions overlap. Within Run a call returns as
// soon as kgo took the record, and Run counts the record's offset as done
// only once the delivery was acknowledged (or fails it as below if it was
// not): a partition's dead letters go out in offset order without waiting
// for each other's acknowledgements, up to 1024 in flight, and the offset
// commits only after the dead letter is stored. Called outside Run, or
// when Run retries a failed dead letter, a call returns only once the
// delivery was acknowledged (or Close gave up on the message). A delivery
// failure is returned (and stops Run: a bad record is never dropped
// silently). A full kgo buffer is waited out, until the call's context
// ends. Failures that cannot heal are marked pipeline.Permanent, so Run
// stops at once: the producer closed ([ErrClosed]), a message too large,
// an unknown topic, an authorization failure, any broker error kgo does
// not retry. Others (a delivery that timed out) are retried under Run's
// retry policy, once the acknowledgements of the dead letters in flight
// with it arrived. An empty topic fails every call with a permanent
// error.
func (p *Producer) DeadLetter(topic string) func(context.Context, pipeline.DeadLetter) error {
	return produce.DeadLetter(client{p}, p.tr, "franz: Producer.DeadLetter", topic)
}
