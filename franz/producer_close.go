package franz

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
)

// UndeliveredMessage is a message [Producer.Close] gave up on: it is
// sink.UndeliveredMessage (Topic, the Source partition and Offset of the
// record it came from, -1 when unknown; String names it as "to TOPIC
// from SOURCE/PARTITION@OFFSET").
type UndeliveredMessage = produce.UndeliveredMessage

// CloseError is the error [Producer.Close] returns when messages were
// still undelivered at the close timeout, or when the client did not close
// in time: it is sink.CloseError (Timeout, Undelivered, Unreported,
// Client, Count), its Error prefixed "franz: closing the producer:".
type CloseError = produce.CloseError

// Close flushes what kgo still buffers, for up to
// ProducerConfig.CloseTimeout, and closes the producer. Messages still
// undelivered then are given up on (kgo.AbortBufferedRecords, which waits
// for the answers to requests in flight, bounded by a second): their
// deliveries fail with an error wrapping [ErrClosed], so the records they
// came from are never committed, and Close returns a *CloseError that
// counts and names them. Close returns within the close timeout plus at
// most two seconds, also when kgo's own close would hang.
//
// Call it after pipeline.Run returned: every Produce stage and dead letter
// has then been reported and Close has nothing to wait for. Calling it
// while Run is still running is safe: later produce calls fail with
// ErrClosed (a produce waiting for buffer room returns), outstanding ones
// as above, and Run stops with that error unless the partition was
// already being taken away. Close is idempotent: later calls wait for the
// first and return its result.
func (p *Producer) Close() error {
	if p.txn != nil {
		return p.closeTransactional()
	}
	return p.tr.Close(produce.CloseSteps{
		Timeout: p.closeTimeout,
		Flush: func(d time.Duration) bool {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			return p.cl.Flush(ctx) != nil
		},
		// Every aborted record's promise reports kgo.ErrAborting (or the
		// give-up context's end) to its receiver, which fails the value
		// and records it as undelivered.
		GiveUp: func(ctx context.Context) {
			p.cancelGiveUp()
			if err := p.cl.AbortBufferedRecords(ctx); err != nil {
				p.logger.Warn("franz: aborting the producer's buffered records", "err", err)
			}
		},
		CloseClient: func() {
			p.cl.Close()
			p.cancelGiveUp()
		},
		Logger: p.logger,
	})
}
