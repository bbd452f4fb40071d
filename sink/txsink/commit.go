package txsink

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-go/sluice/pipeline"
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
		if pipeline.IsInvalid(err) {
			// From a call that cannot refuse a value (Begin, StoreOffset,
			// Read): no value is to blame, and a dead letter of the first
			// would leave the others uncompleted.
			err = pipeline.Permanent(fmt.Errorf("%s: %s", p.w.o.Name, err.Error()))
		}
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
//
// A batch the store refuses (an Invalid error from Write, or from Commit
// for a constraint checked at commit) is written again value by value
// in a new transaction (isolate), which commits without the values the
// store refused (p.bad). In exactly-once mode, when a Commit failed and
// whether it committed is unknown (p.unsure), the next attempt first
// reads the position back, so that a batch that committed is not written
// again.
func (p *partWriter[T]) attempt(ctx context.Context) error {
	if p.unsure {
		committed, err := p.committed(ctx)
		if err != nil {
			return err
		}
		p.unsure = false
		if committed {
			return nil
		}
	}
	p.bad = p.bad[:0]
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return err
	}
	isolated := false
	if err = tx.Write(ctx, p.vals); pipeline.IsInvalid(err) {
		tx, err = p.isolate(ctx, tx)
		isolated = true
	}
	if err == nil {
		err = p.commit(ctx, tx)
	}
	if pipeline.IsInvalid(err) && !isolated {
		tx, err = p.isolate(ctx, tx)
		if err == nil {
			err = p.commit(ctx, tx)
		}
	}
	if pipeline.IsInvalid(err) {
		// Each value was written alone and accepted: the store breaks
		// the Tx contract, and no value is to blame.
		err = pipeline.Permanent(fmt.Errorf("%s: the store refused a batch of %d values although it accepted each value alone: %s",
			p.w.o.Name, len(p.vals), err.Error()))
	}
	if (err != nil || p.fenced) && tx != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
	}
	return err
}

// commit stores the batch's position in tx (exactly-once) and commits
// tx. It returns nil when tx committed or the partition is fenced, the
// Commit error otherwise; in exactly-once mode, after a Commit error
// that does not say the values were refused, it reads the position back
// to tell whether tx committed all the same (the connection dropped
// during the commit), and sets p.unsure when it cannot tell yet.
func (p *partWriter[T]) commit(ctx context.Context, tx Tx[T]) error {
	if p.eos {
		p.stored = p.position()
		if err := tx.StoreOffset(ctx, p.group, p.tp, p.stored); errors.Is(err, ErrFenced) {
			p.fenced = true
			return nil
		} else if err != nil {
			return err
		}
	}
	err := tx.Commit(ctx)
	if err == nil || !p.eos || pipeline.IsInvalid(err) {
		return err
	}
	committed, rerr := p.committed(ctx)
	switch {
	case rerr != nil:
		p.unsure = true
		return err
	case committed:
		p.w.o.Logger.Info("commit reported an error but the position is stored: the batch committed",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
		return nil
	}
	return err
}

// isolate rolls tx back and writes the batch again value by value in a
// new transaction, collecting the values the store refuses (p.bad).
// It returns the new transaction, or nil when it could not begin one.
func (p *partWriter[T]) isolate(ctx context.Context, tx Tx[T]) (Tx[T], error) {
	_ = tx.Rollback(ctx)
	p.bad = p.bad[:0]
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	for i, v := range p.vals {
		err := tx.WriteOne(ctx, v)
		if pipeline.IsInvalid(err) {
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
// record not finished once the batch's written values are; the newest
// offset written, by this batch or before it; and the refused offsets
// not behind the resume point (the refused values' dead letters are
// still to be delivered): those the store refused in this batch, and
// those refused before that this batch did not write again.
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
		if off >= next && !slices.Contains(p.offs, off) {
			inv = append(inv, off)
		}
	}
	for _, b := range p.bad {
		inv = append(inv, p.offs[b.i])
	}
	slices.Sort(inv)
	return Position{Epoch: p.pos.Epoch, Next: next, Written: max(p.pos.Written, p.offs[len(p.offs)-1]), Invalid: slices.Compact(inv)}
}

// committed reads the position back after a Commit whose outcome is
// unknown and tells whether that transaction committed: the position
// stored is the one it stored (p.stored). A position claimed by another
// owner since counts as committed, with p.fenced set: the batch is not
// written here again either way. Store.Read waits for a transaction
// still storing the position, so the answer is final.
func (p *partWriter[T]) committed(ctx context.Context) (bool, error) {
	got, ok, err := p.w.store.Read(ctx, p.group, p.tp)
	switch {
	case err != nil:
		return false, err
	case !ok:
		return false, nil
	case got.Epoch != p.pos.Epoch:
		p.fenced = true
		return true, nil
	}
	return got.Next == p.stored.Next && got.Written == p.stored.Written && slices.Equal(got.Invalid, p.stored.Invalid), nil
}
