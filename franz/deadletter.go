package franz

import (
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/sink"
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter,
// with the contract of sink.Producer.DeadLetter (docs/production.md,
// "Dead letters"): each invalid record goes to topic with its key, value,
// timestamp and headers untouched, plus the sluice.DeadLetterHeader*
// (sluice.dlq.*) headers; within Run a call returns once kgo took the
// record, up to 1024 of a partition in flight in offset order, and the
// offset commits only after the delivery was acknowledged; outside Run, or
// when Run retries one, a call waits for the acknowledgement (or for Close
// to give up on it). A delivery failure is returned and stops Run. What is
// particular to kgo: a full buffer is waited out until the call's context
// ends or Close starts, ahead of the Produce stages of the same producer
// (while dead letters wait, in the order they came, the room a delivery
// frees goes to them, and the stages find the buffer full; one larger
// than kgo.MaxBufferedBytes fails at once), and the failures marked
// sluice.Permanent (Run stops at once) are
// a closed producer ([ErrClosed]), a message too large, an unknown topic,
// an authorization failure and any broker error kgo does not retry; others
// (a delivery that timed out) are retried under Run's retry policy. The
// result is a sink.DeadLetterFunc, whose CheckStart pipeline.Run calls before
// the source starts: an empty topic, or one that does not exist (unless
// ProducerConfig.SkipTopicCheck), is then an error naming it; without that
// check an empty topic fails every call with a permanent error.
func (p *Producer) DeadLetter(topic string) sink.DeadLetterFunc {
	return produce.CoreDeadLetter(p.core, "franz: Producer.DeadLetter", topic)
}
