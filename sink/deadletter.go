package sink

import (
	"context"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// Headers added to every dead letter, next to the original headers (the
// sluice.DeadLetterHeader* constants).
const (
	HeaderTopic     = sluice.DeadLetterHeaderTopic
	HeaderPartition = sluice.DeadLetterHeaderPartition
	HeaderOffset    = sluice.DeadLetterHeaderOffset
	HeaderError     = sluice.DeadLetterHeaderError
	HeaderStage     = sluice.DeadLetterHeaderStage
)

// DeadLetter returns the destination to pass to pipeline.WithDeadLetter.
// It produces each invalid record to topic with its key, value and
// headers untouched, plus the sluice.dlq.* headers naming the original
// topic, partition, offset, the error text and the stage. Run calls it
// from each partition's dead-letter goroutine, so calls for different
// partitions overlap. Within Run a call returns as soon as librdkafka took
// the message: a partition's dead letters go out in offset order, up to
// 1024 in flight, and the record's offset commits only after its delivery
// report succeeded. Called outside Run, or when Run retries a failed dead
// letter, a call returns once the report arrived (or Close gave up on the
// message). A delivery failure is returned and stops Run: a bad record is
// never dropped silently. A full producer queue is waited out. Failures
// that cannot heal are marked sluice.Permanent, so Run stops at once:
// the producer closed ([ErrClosed]) or failed fatally, a message too
// large, an unknown topic, bad configuration or credentials; others (a
// delivery that timed out) are retried under Run's retry policy once the
// reports of the dead letters in flight with it arrived. The whole
// policy: docs/production.md, "Dead letters".
//
// The result is a [DeadLetterFunc], whose CheckStart pipeline.Run calls
// before the source starts: an empty topic, or one that does not exist
// (unless ProducerConfig.SkipTopicCheck), is then an error naming it;
// without that check an empty topic fails every call with a permanent
// error.
func (p *Producer) DeadLetter(topic string) DeadLetterFunc {
	return produce.CheckedDeadLetter(client{p}, p.tr, "sink: Producer.DeadLetter", topic)
}

// DeadLetterFunc is the dead-letter destination [Producer.DeadLetter]
// returns, for pipeline.WithDeadLetter. Call it as the function it is;
// its CheckStart method is its sluice.StartChecker.
type DeadLetterFunc func(context.Context, sluice.DeadLetter) error

// CheckStart returns an error when the destination's topic is empty or
// does not exist (wrapping sluice.ErrMissingTopic and naming the topic;
// nil when ProducerConfig.SkipTopicCheck is set). A cluster that does not
// answer within 10s is no error: the failed check is logged on
// ProducerConfig.Logger. pipeline.Run calls it before the source starts.
func (f DeadLetterFunc) CheckStart(ctx context.Context) error { return produce.CheckStart(ctx, f) }
