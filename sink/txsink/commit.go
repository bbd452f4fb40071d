package txsink

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// flush writes the open batch in one transaction (retried under the
// stage's policy while the error is transient), then completes its
// values: Done for those written, Fail (a dead letter) for those the
// store refused. A fenced partition's values are left uncompleted. On a
// final error every value of the batch goes to Fail (which stops Run, or
// in a share group releases the record) and the batch is emptied.
func (p *partWriter[T]) flush() error {
	p.timer.Stop()
	if p.fenced {
		p.reset()
		return nil
	}
	if len(p.vals) == 0 {
		return nil
	}
	defer p.reset()
	it := stagekit.Item[struct{}]{Ticket: p.tickets[0]}
	_, err := stagekit.Call(p.s.Context(), p.s, p.pr, it, func(ctx context.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, p.attempt(ctx)
	})
	if err != nil {
		for _, t := range p.tickets {
			if ferr := p.s.Fail(t, err); ferr != nil {
				return ferr
			}
		}
		return nil
	}
	if p.fenced {
		p.w.o.Logger.Warn("partition claimed by another member: its values are no longer written here",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition, "epoch", p.pos.Epoch)
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
			return err
		}
	}
	return nil
}

// reset empties the batch.
func (p *partWriter[T]) reset() {
	clear(p.vals)
	p.vals, p.tickets, p.offs, p.weight = p.vals[:0], p.tickets[:0], p.offs[:0], 0
	p.bad = p.bad[:0]
	p.unknown = nil
}

// attempt is one transaction of the open batch. It returns nil when the
// batch committed, or when the partition turned out fenced (p.fenced);
// otherwise the error to retry (transient) or to stop Run with. A batch
// the store refuses (an error marked sluice.Invalid from Write, or from
// Commit for a constraint checked at commit) is written again value by
// value in a new transaction (isolate), which commits without the values
// the store refused (p.bad). A transaction that did not commit is rolled
// back, whatever ended it (a panic included), so that it never keeps the
// partition's position locked.
func (p *partWriter[T]) attempt(ctx context.Context) (err error) {
	if p.unknown != nil {
		// An earlier attempt's commit failed and its outcome could not be
		// read back: find it out before anything is written again.
		if done, err := p.resolve(ctx, p.unknown); done || err != nil {
			return err
		}
		p.unknown = nil
	}
	p.bad = p.bad[:0]
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return notValue(err)
	}
	finished := false
	defer func() {
		if !finished && tx != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	isolated := false
	if err = tx.Write(ctx, p.vals); sluice.IsInvalid(err) {
		if tx, err = p.isolate(ctx, tx); err != nil {
			return err
		}
		isolated = true
	} else if err != nil {
		return err
	}
	finished, err = p.commit(ctx, tx)
	if sluice.IsInvalid(err) && !isolated {
		if tx, err = p.isolate(ctx, tx); err != nil {
			return err
		}
		finished, err = p.commit(ctx, tx)
	}
	if sluice.IsInvalid(err) {
		return sluice.Permanent(fmt.Errorf("the store refused a batch of %d values at commit although it accepted each value alone (no value is to blame): %v", len(p.vals), err))
	}
	return err
}

// commit stores the batch's position in tx (exactly-once) and commits
// tx. It reports whether tx committed (finished) and returns nil when it
// did or when the partition is fenced, the error otherwise: marked
// sluice.Invalid when the store refused a value at commit; else, in
// exactly-once mode, it reads the position back to tell whether tx
// committed all the same (the connection dropped during the commit), and
// keeps the attempted position in p.unknown when it cannot tell yet.
func (p *partWriter[T]) commit(ctx context.Context, tx Tx[T]) (finished bool, err error) {
	if p.eos {
		p.stored = p.position()
		if err := tx.StoreOffset(ctx, p.group, p.tp, p.stored); errors.Is(err, ErrFenced) {
			p.fenced = true
			return false, nil
		} else if err != nil {
			return false, notValue(err)
		}
	}
	err = tx.Commit(ctx)
	if err == nil {
		return true, nil
	}
	if !p.eos || sluice.IsInvalid(err) {
		return false, err
	}
	attempted := p.stored
	done, rerr := p.resolve(ctx, &attempted)
	switch {
	case rerr != nil:
		p.unknown = &attempted // the next attempt resolves it first
		return false, err
	case done:
		return !p.fenced, nil
	}
	return false, err
}

// notValue keeps a store's error from passing for a value's: only Write,
// WriteOne and Commit report refused values, so an error marked
// sluice.Invalid from another call is made permanent.
func notValue(err error) error {
	if err != nil && sluice.IsInvalid(err) {
		return sluice.Permanent(fmt.Errorf("the store refused the transaction, not one value (a constraint checked at commit?): %v", err))
	}
	return err
}

// isolate rolls tx back and writes the batch again value by value in a
// new transaction, collecting the values the store refuses (p.bad).
func (p *partWriter[T]) isolate(ctx context.Context, tx Tx[T]) (Tx[T], error) {
	_ = tx.Rollback(ctx)
	tx, err := p.w.store.Begin(ctx)
	if err != nil {
		return nil, notValue(err)
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
// record not finished once the batch's written values are; the newest
// offset written, this batch's or an earlier one's; and the refused
// offsets not behind the resume point (their dead letters are still to
// be delivered), without those this batch wrote.
func (p *partWriter[T]) position() Position {
	refused := make(map[int64]bool, len(p.bad))
	for _, b := range p.bad {
		refused[p.offs[b.i]] = true
	}
	done := make([]stagekit.Ticket, 0, len(p.tickets))
	written := make(map[int64]bool, len(p.offs))
	for i, t := range p.tickets {
		if !refused[p.offs[i]] {
			done = append(done, t)
			written[p.offs[i]] = true
		}
	}
	next := p.s.Watermark(done...)
	inv := make([]int64, 0, len(p.pos.Invalid)+len(refused))
	for _, off := range p.pos.Invalid {
		if off >= next && !written[off] {
			inv = append(inv, off)
		}
	}
	for off := range refused {
		inv = append(inv, off)
	}
	slices.Sort(inv)
	return Position{Epoch: p.pos.Epoch, Next: next, Written: max(p.pos.Written, p.offs[len(p.offs)-1]),
		Invalid: slices.Compact(inv)}
}

// resolve finds out, after a commit failed, whether the transaction that
// stored attempted committed all the same (the connection dropped during
// the commit): it reads the position back. The position attempted, under
// this owner's epoch: it committed (done). Another epoch: fenced (done).
// Anything else: it did not commit. A batch whose position equals the one
// stored before wrote no row (every value of a batch either raises
// Written, leaves Invalid, or is refused again), so the comparison cannot
// mistake an earlier transaction for this one where it matters.
func (p *partWriter[T]) resolve(ctx context.Context, attempted *Position) (done bool, err error) {
	got, ok, err := p.w.store.Read(ctx, p.group, p.tp)
	if err != nil {
		return false, notValue(err)
	}
	switch {
	case !ok:
		return false, nil
	case got.Epoch != attempted.Epoch:
		p.fenced = true
		return true, nil
	case got.Next == attempted.Next && got.Written == attempted.Written && slices.Equal(got.Invalid, attempted.Invalid):
		p.stored = *attempted
		p.w.o.Logger.Info("commit reported an error but the position is stored: the batch committed",
			"stage", p.w.o.Name, "topic", p.tp.Topic, "partition", p.tp.Partition)
		return true, nil
	}
	return false, nil
}
