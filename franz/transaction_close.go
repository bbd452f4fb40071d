package franz

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
)

// closeTransactional is Close of a transactional producer: the plain
// producer's steps on the shared client, except that it leaves the
// client open (the source's Run closes it once its last transaction
// ended), and does nothing with a client its source's Run never gave it.
// After Run returned every delivery was reported and the client is
// closed: there is nothing left to flush.
func (p *Producer) closeTransactional() error {
	attached := p.txn.attached.Load() // p.cl may be read after this only
	return p.tr.Close(produce.CloseSteps{
		Timeout: p.closeTimeout,
		Flush: func(d time.Duration) bool {
			if !attached {
				return false
			}
			return p.flushWithin(d)
		},
		GiveUp: func(ctx context.Context) {
			p.cancelGiveUp()
			if !attached {
				return
			}
			if err := p.cl.AbortBufferedRecords(ctx); err != nil {
				p.logger.Warn("franz: aborting the transactional producer's buffered records", "err", err)
			}
		},
		CloseClient: p.cancelGiveUp,
		Logger:      p.logger,
	})
}
