package franz

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
)

// Close has the contract of sink.Producer's Close: it flushes for up to
// ProducerConfig.CloseTimeout, gives up on what is still undelivered (its
// deliveries fail with an error wrapping [ErrClosed], their records are
// never committed, and Close returns a *sluice.CloseError naming them), and
// returns within the timeout plus at most two seconds. Call it after
// pipeline.Run returned; called while Run runs, later produce calls fail
// with ErrClosed and Run stops with that error unless the partition was
// already being taken away. Later calls wait for the first and return its
// result. A message a receiver (a Produce stage, a dead letter) was
// handing to kgo when Close started is flushed with the rest, or given
// up on if it does not reach kgo within the timeout. With kgo, giving up is
// kgo.AbortBufferedRecords (which waits for
// the answers to requests in flight, bounded by a second), and a produce
// waiting for buffer room returns at Close.
func (p *Producer) Close() error {
	if p.txn != nil {
		return p.closeTransactional()
	}
	return p.tr.Close(produce.CloseSteps{
		Timeout: p.closeTimeout,
		Flush:   p.flushWithin,
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

// flushWithin is Close's flush step: it waits up to d for the sends
// admitted before Close started to hand their records to kgo
// (handedOver), so that kgo's Flush sees them, then for kgo to deliver
// or fail everything it buffers. It reports whether records were still
// outstanding at d.
func (p *Producer) flushWithin(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if !p.handedOver(ctx) {
		return true
	}
	return p.cl.Flush(ctx) != nil
}
