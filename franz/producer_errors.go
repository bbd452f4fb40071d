package franz

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// classify marks err, a failure to produce or deliver a message, with
// sluice.Permanent when producing again cannot help, so that Run stops
// at once instead of retrying:
//   - the producer or its client is closed, or Close gave up on the
//     message ([ErrClosed], kgo.ErrClientClosed, kgo.ErrAborting);
//   - the broker refused it with an error kgo does not retry
//     (kerr.Error with Retriable false: a message too large, an invalid
//     record, authorization, an unsupported version...), or
//     UNKNOWN_TOPIC_OR_PARTITION, which kgo already retried
//     (kgo.UnknownTopicRetries) before it failed the record.
//
// A delivery that timed out or ran out of retries (kgo.ErrRecordTimeout,
// kgo.ErrRecordRetries, whatever broker error came last) and a cancelled
// wait for buffer room stay transient.
func classify(err error) error {
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, kgo.ErrClientClosed), errors.Is(err, kgo.ErrAborting):
		return sluice.Permanent(err)
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && (!ke.Retriable || ke == kerr.UnknownTopicOrPartition) {
		return sluice.Permanent(err)
	}
	return err
}
