package confluent

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/produce"
)

// Close flushes what is still queued, for up to ProducerConfig.CloseTimeout,
// and closes the producer. Messages still undelivered then are given up on:
// their deliveries fail (with an error wrapping [ErrClosed]), so the
// records they came from are never committed, and Close returns a
// *sluice.CloseError that counts and names them. Close returns within the close
// timeout plus at most two seconds, also when librdkafka's own close would
// hang.
//
// Call it after pipeline.Run returned: every Produce stage and dead letter
// has then been reported and Close has nothing to wait for. Calling it
// while Run is still running is safe: later produce calls fail with
// ErrClosed, outstanding ones as above, and Run stops with that error
// unless the partition was already being taken away. Close is idempotent:
// later calls wait for the first and return its result.
func (p *Producer) Close() error {
	return p.tr.Close(produce.CloseSteps{
		Timeout: p.closeTimeout,
		Flush: func(d time.Duration) bool {
			return p.p.Flush(int(d.Milliseconds())) > 0
		},
		// Every purged message's report goes to its receiver, which fails
		// the value and records it as undelivered.
		GiveUp: func(context.Context) {
			if err := p.p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight); err != nil {
				p.logger.Warn("confluent: purging the producer's queue", "err", err)
			}
		},
		// librdkafka's close waits for its poller, which waits while a
		// report channel is full, and for its threads.
		CloseClient: func() {
			p.p.Close()
			p.wg.Wait()
		},
		Logger: p.logger,
	})
}
