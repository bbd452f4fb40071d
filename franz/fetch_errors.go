package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchErrorFatal classifies an error kgo attached to a fetched partition,
// for both poll loops (Source's and ShareSource's; client names which
// client, as "client" or "share client"): the end of a poll's own context
// (the poll timeout, a wake-up) is nothing; a closed client is fatal (the
// error returned, which ends Run); anything else kgo retries by itself and
// is logged as a warning.
func fetchErrorFatal(log *slog.Logger, client, topic string, p int32, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("franz: %s closed: %w", client, err)
	default:
		log.Warn("fetch error", "client", client, "topic", topic, "partition", p, "err", err)
		return nil
	}
}
