package txsink

import (
	"context"
	"errors"
)

// storeFinal runs when a partition's graph was taken away (an OnClose
// hook: every stage goroutine, the dead-letter one included, has exited).
// After a graceful drain it stores the partition's final position when
// it moved past the last one stored, in a transaction of its own under
// the claimed epoch: records finished after the last batch's transaction
// (their dead letters delivered, or filtered out) are then not dead-
// lettered again by the next owner. It changes nothing after a loss or a
// fence, and a failure only costs those extra dead letters, so it is
// logged, not returned.
func (p *partWriter[T]) storeFinal(ctx context.Context) error {
	if !p.eos || !p.drained || p.fenced {
		return nil
	}
	next := p.s.Watermark()
	if next <= p.pos.Next {
		return nil
	}
	pos := Position{Epoch: p.pos.Epoch, Next: next, Written: p.pos.Written}
	for _, off := range p.pos.Invalid {
		if off >= next {
			pos.Invalid = append(pos.Invalid, off)
		}
	}
	err := p.storeOnly(ctx, pos)
	switch {
	case errors.Is(err, ErrFenced):
		return nil
	case err != nil:
		p.w.o.Logger.Warn("final position not stored: the next owner may dead-letter again what this one did",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition, "next", next, "err", err)
		return nil
	}
	p.pos = pos
	return nil
}

// storeOnly stores pos in a transaction that writes nothing else.
func (p *partWriter[T]) storeOnly(ctx context.Context, pos Position) error {
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := tx.StoreOffset(ctx, p.group, p.tp, pos); err != nil {
		return err
	}
	err = tx.Commit(ctx)
	committed = err == nil
	return err
}
