package sink

import (
	"context"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// Headers added to every dead letter, after the original headers (the
// sluice.DeadLetterHeader* constants), by every Producer alike.
const (
	HeaderTopic     = sluice.DeadLetterHeaderTopic
	HeaderPartition = sluice.DeadLetterHeaderPartition
	HeaderOffset    = sluice.DeadLetterHeaderOffset
	HeaderError     = sluice.DeadLetterHeaderError
	HeaderStage     = sluice.DeadLetterHeaderStage
)

// ErrClosed is wrapped by the errors of produce calls and dead letters
// made after (or outstanding when) a [Producer]'s Close closed it,
// whichever the client: errors.Is(err, sink.ErrClosed) holds for the
// errors of every backend, whose own sentinel (confluent.ErrClosed,
// franz.ErrClosed, testkit.ErrProducerClosed) names it in the text.
var ErrClosed = produce.ErrClosed

// DeadLetterFunc is the dead-letter destination a [Producer]'s DeadLetter
// returns, for pipeline.WithDeadLetter (see Producer.DeadLetter for the
// contract). Call it as the function it is; its CheckStart method is its
// sluice.StartChecker. Only a Producer's DeadLetter makes a working one:
// CheckStart of another function of this type calls it with a zero
// sluice.DeadLetter under a context that asks for the start check.
type DeadLetterFunc func(context.Context, sluice.DeadLetter) error

// CheckStart returns an error when the destination's topic is empty or
// does not exist (wrapping sluice.ErrMissingTopic and naming the topic;
// nil when the producer's ProducerConfig.SkipTopicCheck is set). A
// cluster that does not answer within 10s is no error: the failed check
// is logged on the producer's logger. pipeline.Run calls it before the
// source starts, once; it is safe for concurrent use.
func (f DeadLetterFunc) CheckStart(ctx context.Context) error { return produce.CheckStart(ctx, f) }
