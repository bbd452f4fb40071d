package source

import (
	"context"
	"log/slog"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// forwardLogs copies librdkafka's log events to log until the consumer's
// Close closes the channel or stop is closed, then closes done. It passes
// the topic and new topic ID of each log line reporting a recreated topic
// (recreatedTopic) to recreated.
//
// librdkafka uses syslog levels: 0-3 are errors, 4 warnings, 5-6 info and 7
// debug (only produced for the contexts of the "debug" property). Debug
// lines are forwarded only when debug is set (Overrides sets "debug"):
// the "metadata" context the source adds itself is watched, not logged.
func forwardLogs(log *slog.Logger, ch <-chan kafka.LogEvent, stop <-chan struct{}, done chan<- struct{},
	recreated func(topic, id string), debug bool) {
	defer close(done)
	ctx := context.Background()
	for {
		var ev kafka.LogEvent
		select {
		case e, ok := <-ch:
			if !ok {
				return
			}
			ev = e
		case <-stop:
			return
		}
		if topic, id, ok := recreatedTopic(ev); ok {
			recreated(topic, id)
		}
		if ev.Level >= 7 && !debug {
			continue
		}
		lvl := slog.LevelDebug
		switch {
		case ev.Level <= 3:
			lvl = slog.LevelError
		case ev.Level == 4:
			lvl = slog.LevelWarn
		case ev.Level <= 6:
			lvl = slog.LevelInfo
		}
		if !log.Enabled(ctx, lvl) {
			continue
		}
		log.Log(ctx, lvl, ev.Message, "source", "librdkafka", "tag", ev.Tag, "client", ev.Name)
	}
}

// logClientError logs a non-fatal client error. librdkafka recovers from
// these itself (reconnects, retries); transient transport errors are
// logged at debug level, the rest as warnings.
func logClientError(log *slog.Logger, e kafka.Error) {
	switch e.Code() {
	case kafka.ErrTransport, kafka.ErrTimedOut:
		log.Debug("client error", "code", e.Code().String(), "err", e)
	default:
		log.Warn("client error", "code", e.Code().String(), "err", e, "retriable", e.IsRetriable())
	}
}
