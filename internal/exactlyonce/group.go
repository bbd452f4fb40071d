package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// Group is a [pipeline.Group] that commits through Kafka transactions: a
// source running exactly-once wraps the runtime's group in it ([Wrap]) and
// hands the result to its poll loop instead. It begins a transaction
// before the first record a graph gets, and commits it at every commit
// point (the source's interval Offsets call, a graceful Revoke, Shutdown)
// after a barrier: the poll loop, held inside that call, delivers nothing
// while the Group waits until every record handed to a graph finished
// (produced and reported, filtered or dead-lettered); then the records'
// offsets go into the transaction, which commits.
//
// Offsets, Revoke and Shutdown therefore return no offsets: the source
// commits nothing itself. Every method must be called from the source's
// poll goroutine only, as for any Group. The methods it does not override
// are the wrapped group's.
//
// Once a transaction aborted (or one could not begin), [Group.Err] returns
// the error; the source must then stop as for a fatal client failure: lose
// every partition without committing and return the error from Run.
type Group struct {
	pipeline.Group // the runtime's group
	txn            Txn
	cfg            Config
	log            *slog.Logger

	parts map[pipeline.TopicPartition]*partition // owned partitions
	open  bool                                   // a transaction is open
	err   error                                  // the first failure; the Group commits nothing after it
}

// partition is what the Group knows of one owned partition. Offsets are
// "next" offsets (last offset + 1), -1 while unknown.
type partition struct {
	delivered int64 // after the last record handed to the graph
	done      int64 // the runtime's committable offset
	committed int64 // what the last committed transaction committed
	inTxn     bool  // records were delivered since the last commit
}

var _ pipeline.Group = (*Group)(nil)

// Wrap returns inner committing through txn. The caller (a source's Run)
// must have initialized txn's transactions (fencing its predecessors)
// before, and must check [Group.Err] after each call that may commit
// (Deliver, Offsets, Revoke, Lose, Shutdown).
func Wrap(inner pipeline.Group, txn Txn, cfg Config) *Group {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Group{Group: inner, txn: txn, cfg: cfg, log: log.With("component", "sluice/exactlyonce"),
		parts: make(map[pipeline.TopicPartition]*partition)}
}

// Err returns the failure that ended the Group's transactions (wrapping
// [ErrAborted] when a transaction was aborted), or nil.
func (g *Group) Err() error { return g.err }

// Assign implements pipeline.Group.
func (g *Group) Assign(tps []pipeline.TopicPartition) error {
	err := g.Group.Assign(tps)
	for _, tp := range tps {
		if g.parts[tp] == nil {
			g.parts[tp] = &partition{delivered: -1, done: -1, committed: -1}
		}
	}
	return err
}

// Deliver implements pipeline.Group: it begins a transaction if none is
// open, then hands recs to the runtime. After a failure it drops them.
func (g *Group) Deliver(tp pipeline.TopicPartition, recs []pipeline.Record) bool {
	p := g.parts[tp]
	if g.err != nil || p == nil || len(recs) == 0 {
		return false
	}
	if !g.open {
		if err := g.txn.Begin(); err != nil {
			g.err = fmt.Errorf("sluice: beginning a transaction: %w", err)
			g.log.Error("exactly-once stopped", "err", g.err)
			return false
		}
		g.open = true
	}
	p.delivered = recs[len(recs)-1].Offset + 1
	p.inTxn = true
	return g.Group.Deliver(tp, recs)
}

// Offsets implements pipeline.Group: the source's interval commit point.
// If the records in flight finish within Config.BarrierTimeout, the open
// transaction commits with their offsets; otherwise it stays open and the
// next interval tries again. It returns nothing for the source to commit.
func (g *Group) Offsets() []pipeline.Offset {
	g.absorb(g.Group.Offsets())
	g.commitPoint("interval commit", time.Now().Add(g.cfg.barrierTimeout()), false)
	return nil
}

// Revoke implements pipeline.Group: the revoked partitions drain, then the
// transaction commits with the offsets of every owned partition (after the
// barrier) before Revoke returns, so before the source lets the
// partitions go. A revoked partition whose drain left records unfinished,
// or a barrier past Config.BarrierTimeout, aborts the transaction instead.
// It returns nothing for the source to commit.
func (g *Group) Revoke(tps []pipeline.TopicPartition) []pipeline.Offset {
	g.absorb(g.Group.Revoke(tps))
	if g.err == nil && g.open {
		if stuck := g.unfinished(tps); len(stuck) > 0 {
			g.abort(fmt.Errorf("revoked partitions drained with records unfinished (%s)", strings.Join(stuck, ", ")))
		} else {
			g.commitPoint("revoke", time.Now().Add(g.cfg.barrierTimeout()), true)
		}
	}
	g.forget(tps)
	return nil
}

// Lose implements pipeline.Group. A lost partition with records in the open
// transaction aborts it: their outputs must not commit, and neither may
// the other partitions' outputs without the lost ones' offsets.
func (g *Group) Lose(tps []pipeline.TopicPartition) {
	g.Group.Lose(tps)
	if g.err == nil && g.open {
		var held []string
		for _, tp := range tps {
			if p := g.parts[tp]; p != nil && p.inTxn {
				held = append(held, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
			}
		}
		if len(held) > 0 {
			g.abort(fmt.Errorf("partitions lost with records in the transaction (%s)", strings.Join(held, ", ")))
		}
	}
	g.forget(tps)
}

// Shutdown implements pipeline.Group: every partition drains, then the
// transaction commits, or aborts if a drain left records unfinished. It
// returns nothing for the source to commit.
func (g *Group) Shutdown() []pipeline.Offset {
	g.absorb(g.Group.Shutdown())
	if g.err == nil && g.open {
		all := make([]pipeline.TopicPartition, 0, len(g.parts))
		for tp := range g.parts {
			all = append(all, tp)
		}
		if stuck := g.unfinished(all); len(stuck) > 0 {
			g.abort(fmt.Errorf("shutdown drained with records unfinished (%s)", strings.Join(stuck, ", ")))
		} else {
			g.commitPoint("shutdown", time.Now(), true)
		}
	}
	clear(g.parts)
	return nil
}

// absorb records the runtime's committable offsets.
func (g *Group) absorb(offs []pipeline.Offset) {
	for _, o := range offs {
		if p := g.parts[o.TopicPartition]; p != nil {
			p.done = o.Next
		}
	}
}

func (g *Group) forget(tps []pipeline.TopicPartition) {
	for _, tp := range tps {
		delete(g.parts, tp)
	}
}

// unfinished names the partitions of tps with delivered records the
// runtime has not finished.
func (g *Group) unfinished(tps []pipeline.TopicPartition) []string {
	var out []string
	for _, tp := range tps {
		if p := g.parts[tp]; p != nil && p.inTxn && p.done != p.delivered {
			out = append(out, fmt.Sprintf("%s/%d at %d of %d", tp.Topic, tp.Partition, p.done, p.delivered))
		}
	}
	return out
}

// barrier waits, until deadline, for every record delivered to finish.
func (g *Group) barrier(deadline time.Time) bool {
	for {
		g.absorb(g.Group.Offsets())
		if len(g.unfinished(g.owned())) == 0 {
			return true
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		time.Sleep(min(wait, barrierPoll))
	}
}

func (g *Group) owned() []pipeline.TopicPartition {
	out := make([]pipeline.TopicPartition, 0, len(g.parts))
	for tp := range g.parts {
		out = append(out, tp)
	}
	return out
}

// commitPoint commits the open transaction once the barrier (until
// deadline) is reached. Past the deadline it aborts when must is set, and
// otherwise leaves the transaction open.
func (g *Group) commitPoint(why string, deadline time.Time, must bool) {
	if g.err != nil || !g.open {
		return
	}
	if !g.barrier(deadline) {
		stuck := strings.Join(g.unfinished(g.owned()), ", ")
		if must {
			g.abort(fmt.Errorf("%s: records in flight did not finish within %v (%s)", why, g.cfg.barrierTimeout(), stuck))
			return
		}
		g.log.Warn("records in flight did not finish within the barrier timeout; the transaction stays open until the next commit point",
			"barrier_timeout", g.cfg.barrierTimeout(), "unfinished", stuck)
		return
	}
	var offs []pipeline.Offset
	for tp, p := range g.parts {
		if p.done >= 0 && p.done != p.committed {
			offs = append(offs, pipeline.Offset{TopicPartition: tp, Next: p.done})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.commitTimeout())
	start := time.Now()
	err := g.txn.Commit(ctx, offs)
	cancel()
	g.Group.Committed(offs, time.Since(start), err)
	if err != nil {
		g.abort(fmt.Errorf("%s: committing the transaction with offsets %v: %w", why, offs, err))
		return
	}
	g.open = false
	for _, p := range g.parts {
		p.committed = max(p.committed, p.done)
		p.inTxn = false
	}
}

// abort aborts the open transaction and records why; the Group commits
// nothing after it.
func (g *Group) abort(cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.commitTimeout())
	defer cancel()
	g.open = false
	g.err = fmt.Errorf("%w: %w", ErrAborted, cause)
	if err := g.txn.Abort(ctx); err != nil {
		g.err = errors.Join(g.err, fmt.Errorf("sluice: aborting the transaction: %w", err))
	}
	g.log.Error("exactly-once transaction aborted; the consumer stops", "err", g.err)
}
