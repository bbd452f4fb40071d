package txsink

import (
	"context"
	"errors"
	"slices"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// flush writes the open batch in one transaction (retried under the
// stage's policy while the error is transient), then completes its
// values: Done for those written, Fail (a dead letter) for those the
// store refused. A fenced partition's values are left uncompleted.
func (p *partWriter[T]) flush() error {
	p.timer.Stop()
	if p.fenced {
		p.reset()
		return nil
	}
	if len(p.vals) == 0 {
		return nil
	}
	it := stagekit.Item[struct{}]{Ticket: p.tickets[0]}
	_, err := stagekit.Call(p.s.Context(), p.s, p.pr, it, func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, p.attempt(ctx)
	})
	if err != nil {
		return p.s.Fail(p.tickets[0], err)
	}
	if p.fenced {
		p.w.o.Logger.Warn("partition claimed by another member: its values are no longer written here",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition, "epoch", p.pos.Epoch)
		p.reset()
		return nil
	}
	if p.eos {
		p.pos = p.stored
		clear(p.invalid)
		for _, off := range p.pos.Invalid {
			p.invalid[off] = true
		}
	}
	refused := make([]stagekit.Ticket, len(p.bad))
	for j, b := range p.bad {
		refused[j], p.tickets[b.i] = p.tickets[b.i], stagekit.Ticket{}
	}
	p.s.Done(p.tickets...) // the zero Tickets of refused values complete nothing
	for j, b := range p.bad {
		if err := p.s.Fail(refused[j], b.err); err != nil {
			p.reset()
			return err
		}
	}
	p.reset()
	return nil
}

// reset empties the batch.
func (p *partWriter[T]) reset() {
	clear(p.vals)
	p.vals, p.tickets, p.offs, p.weight = p.vals[:0], p.tickets[:0], p.offs[:0], 0
	p.bad = p.bad[:0]
}

// attempt is one transaction of the open batch. It returns nil when the
// batch committed, or when the partition turned out fenced (p.fenced);
// otherwise the error to retry (transient) or to stop Run with.
func (p *partWriter[T]) attempt(ctx context.Context) (err error) {
	p.bad = p.bad[:0]
	st := p.w.store
	tx, err := st.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if (err != nil || p.fenced) && tx != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err = tx.Write(ctx, p.vals); sluice.IsInvalid(err) {
		if tx, err = p.isolate(ctx, tx); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if p.eos {
		p.stored = p.position()
		if err = tx.StoreOffset(ctx, p.group, p.tp, p.stored); errors.Is(err, ErrFenced) {
			p.fenced = true
			return nil
		} else if err != nil {
			return err
		}
	}
	if err = tx.Commit(ctx); err != nil && p.eos {
		return p.committedAnyway(ctx, err)
	}
	return err
}

// isolate rolls tx back and writes the batch again value by value in a
// new transaction, collecting the values the store refuses (p.bad).
func (p *partWriter[T]) isolate(ctx context.Context, tx Tx[T]) (Tx[T], error) {
	_ = tx.Rollback(ctx)
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	for i, v := range p.vals {
		err := tx.WriteOne(ctx, v)
		if sluice.IsInvalid(err) {
			p.bad = append(p.bad, badValue{i: i, err: err})
			continue
		}
		if err != nil {
			return tx, err
		}
	}
	return tx, nil
}

// position is what the batch's transaction stores: resume at the oldest
// record not finished once the batch's written values are, the batch's
// last offset written, and the refused offsets not behind the resume
// point (the refused values' dead letters are still to be delivered).
func (p *partWriter[T]) position() Position {
	var done []stagekit.Ticket
	if len(p.bad) == 0 {
		done = p.tickets
	} else {
		done = make([]stagekit.Ticket, 0, len(p.tickets))
		for i, t := range p.tickets {
			if !slices.ContainsFunc(p.bad, func(b badValue) bool { return b.i == i }) {
				done = append(done, t)
			}
		}
	}
	next := p.s.Watermark(done...)
	inv := make([]int64, 0, len(p.pos.Invalid)+len(p.bad))
	for _, off := range p.pos.Invalid {
		if off >= next {
			inv = append(inv, off)
		}
	}
	for _, b := range p.bad {
		inv = append(inv, p.offs[b.i])
	}
	slices.Sort(inv)
	return Position{Epoch: p.pos.Epoch, Next: next, Written: p.offs[len(p.offs)-1], Invalid: slices.Compact(inv)}
}

// committedAnyway decides, after Commit failed, whether the transaction
// committed all the same (the connection dropped during the commit): it
// reads the position back. Stored by this owner with this batch: nil.
// Claimed by another owner since: fenced. Otherwise the commit error, to
// retry the batch.
func (p *partWriter[T]) committedAnyway(ctx context.Context, commitErr error) error {
	got, ok, err := p.w.store.Read(ctx, p.group, p.tp)
	if err != nil || !ok {
		return commitErr
	}
	switch {
	case got.Epoch != p.pos.Epoch:
		p.fenced = true
		return nil
	case got.Written >= p.stored.Written:
		p.w.o.Logger.Info("commit reported an error but the position is stored: the batch committed",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition, "err", commitErr)
		return nil
	}
	return commitErr
}
