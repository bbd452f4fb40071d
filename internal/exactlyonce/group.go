package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
)

// Group is a [sluice.Group] that commits through Kafka transactions: a
// source running exactly-once wraps the runtime's group in it and hands
// the result to its poll loop instead ([Insert]: beneath the [Layer]s of
// the group it was given, as a follower's). It begins a transaction
// before the first record a graph gets, and commits it at every commit
// point (the source's interval Offsets call, a graceful Revoke, Shutdown)
// after a barrier: no record is handed to a graph until every record
// handed to one before finished (produced and reported, filtered or
// dead-lettered); then the records' offsets go into the transaction,
// which commits.
//
// At an interval the barrier does not hold the poll loop: records the
// source delivers meanwhile are held by the Group (Deliver asks to pause
// a partition once it holds holdPause records of it), the Group checks
// the barrier at every Deliver, every Resumable (the source asks after
// records finished) and at the next interval, commits once it is reached,
// hands the held records to the graphs in a new transaction and lists
// their partitions as resumable.
// Revoke and Shutdown wait for the barrier on the poll loop (they must
// commit before they return).
//
// Offsets, Revoke and Shutdown therefore return no offsets: the source
// commits nothing itself. Every method must be called from the source's
// poll goroutine only, as for any Group. The methods it does not override
// are the wrapped group's.
//
// A transaction that aborts (a partition lost with records in it, a failed
// commit, a revoke whose drain left records unfinished (drained.go) or
// whose barrier passed the drain timeout) is followed by a rewind in
// place (abort.go): every partition still owned with records in it (or
// held) has its graph cancelled, is rewound to the group's committed
// offset (Txn.Rewind) and gets a new graph (after an abort inside
// Deliver, at the next Polled, Offsets or Resumable: rewind_deferred.go);
// the next records begin a new transaction. When that is impossible (the
// producer is fenced or failed fatally, Abort or Rewind failed), or at a
// shutdown after a stage error stopped Run or a failed commit, the Group
// stops: [Group.Err] then returns the error, and the source must stop as
// for a fatal client failure: lose every partition without committing and
// return the error from Run. It stops as well at the first commit after Run
// abandoned a function that ignored its context (sluice.ErrAbandoned),
// which aborts instead: that function may still produce into the open
// transaction. A shutdown that aborts because the group
// refused its offsets or its drain left records unfinished does not stop
// it: nothing is at risk (Shutdown).
type Group struct {
	sluice.Group // the runtime's group
	ctx          context.Context
	txn          Txn
	cfg          Config
	log          *slog.Logger

	parts map[sluice.TopicPartition]*partition // owned partitions
	open  bool                                 // a transaction is open
	// draining: a commit is due; records are held, not delivered.
	draining bool
	// resumable: partitions whose held records were delivered and that
	// the runtime did not ask to pause, for the next Resumable.
	resumable []sluice.TopicPartition
	err       error // the first failure; the Group commits nothing after it
	// inDeliver: a Deliver call runs (an abort in it defers its rewind);
	// deferred: the partitions awaiting that rewind, aborted because of
	// deferredCause (rewind_deferred.go).
	inDeliver     bool
	deferred      []sluice.TopicPartition
	deferredCause error
	// layers: the groups above the Group that hold records back (Insert),
	// outermost first; told of every rewind.
	layers []Layer
}

// partition is what the Group knows of one owned partition. Offsets are
// "next" offsets (last offset + 1), -1 while unknown.
type partition struct {
	delivered int64 // after the last record handed to the graph
	done      int64 // the runtime's committable offset
	committed int64 // what the last committed transaction committed
	inTxn     bool  // records were delivered since the last commit
	leaving   bool  // being revoked: never rewound
	rewinding bool  // awaiting a deferred rewind, or Lose (its topic gone): its records are dropped
	held      []sluice.Record
}

func newPartition() *partition { return &partition{delivered: -1, done: -1, committed: -1} }

var _ sluice.Group = (*Group)(nil)

// Wrap returns inner committing through txn. ctx is the one the source's
// Run got: its cause tells a shutdown after a stage error (whose record's
// outputs may be partly produced: the transaction aborts) from a plain
// one. The caller must have initialized txn's transactions (fencing its
// predecessors) before, and must check [Group.Err] after each call that
// may commit (Deliver, Offsets, Resumable, Revoke, Lose, Shutdown).
func Wrap(ctx context.Context, inner sluice.Group, txn Txn, cfg Config) *Group {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Group{Group: inner, ctx: ctx, txn: txn, cfg: cfg, log: log.With("component", "sluice/exactlyonce"),
		parts: make(map[sluice.TopicPartition]*partition)}
}

// Err returns the failure that ended the Group's transactions (wrapping
// [ErrAborted] when a transaction was aborted), or nil; nil on a nil
// Group (a Run without transactions).
func (g *Group) Err() error {
	if g == nil {
		return nil
	}
	return g.err
}

// JoinErr returns a source Run's error err with the Group's failure
// joined after it, unless err holds it already.
func (g *Group) JoinErr(err error) error {
	if gerr := g.Err(); gerr != nil && !errors.Is(err, gerr) {
		return errors.Join(err, gerr)
	}
	return err
}

// Assign implements sluice.Group.
func (g *Group) Assign(tps []sluice.TopicPartition) error {
	err := g.Group.Assign(tps)
	for _, tp := range tps {
		if g.parts[tp] == nil {
			g.parts[tp] = newPartition()
		}
	}
	return err
}

// Deliver implements sluice.Group: it begins a transaction if none is
// open and hands recs to the runtime. While a commit is due (and its
// barrier not reached) it holds them instead, and asks to pause the
// partition once it holds holdPause records of it. After a failure it
// drops them, and so it does when the commit it tried first aborted and
// rewound tp (they were fetched before the rewind), and until the
// deferred rewind of tp ran (rewind_deferred.go).
func (g *Group) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	p := g.parts[tp]
	if g.err != nil || p == nil || p.rewinding || len(recs) == 0 {
		return false
	}
	g.inDeliver = true
	defer func() { g.inDeliver = false }()
	if g.draining {
		g.tryCommit()
		if g.err != nil || g.parts[tp] != p {
			return false
		}
	}
	if g.draining {
		p.held = append(p.held, recs...)
		return len(p.held) >= holdPause
	}
	return g.deliver(tp, p, recs)
}

func (g *Group) deliver(tp sluice.TopicPartition, p *partition, recs []sluice.Record) bool {
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

// Offsets implements sluice.Group: the source's interval commit point.
// It commits at once if nothing is in flight, and otherwise starts
// holding records until the barrier is reached (see Resumable). It
// returns nothing for the source to commit.
func (g *Group) Offsets() []sluice.Offset {
	g.finishRewind()
	g.absorb(g.Group.Offsets())
	if g.err == nil && g.open {
		g.draining = true
		g.tryCommit()
	}
	return nil
}

// Resumable implements sluice.Group: the runtime's resumable partitions
// and, once a due commit reached its barrier and committed, those whose
// held records were delivered, and the partitions rewound since the last
// call (their new graphs have room; one the source paused must resume).
func (g *Group) Resumable() []sluice.TopicPartition {
	g.finishRewind()
	out := g.Group.Resumable()
	if g.draining {
		g.tryCommit()
	}
	out = append(out, g.resumable...)
	g.resumable = nil
	return out
}

// tryCommit commits the due transaction if every delivered record
// finished, then delivers the held records.
func (g *Group) tryCommit() {
	g.absorb(g.Group.Offsets())
	if len(g.unfinished(g.owned())) > 0 {
		return
	}
	if g.open {
		g.commit("interval commit")
		if g.err != nil {
			return
		}
	}
	g.draining = false
	for tp, p := range g.parts {
		if len(p.held) == 0 {
			continue
		}
		recs := p.held
		p.held = nil
		if !g.deliver(tp, p, recs) && g.err == nil {
			g.resumable = append(g.resumable, tp)
		}
	}
}

// Revoke implements sluice.Group: the revoked partitions drain, then the
// transaction commits with the offsets of every owned partition (after the
// barrier) before Revoke returns, so before the source lets the
// partitions go. The barrier shares the drain timeout with the drain. A
// drain that left records unfinished (drained.go), or a barrier past the
// drain timeout, aborts the transaction instead (and the partitions kept
// are rewound, unless a stage error is stopping Run; the revoked ones'
// next owner starts at the last committed transaction). It returns
// nothing for the source to commit.
func (g *Group) Revoke(tps []sluice.TopicPartition) []sluice.Offset {
	start := time.Now()
	deadline := start.Add(g.DrainTimeout())
	for _, tp := range tps {
		if p := g.parts[tp]; p != nil {
			p.leaving = true
		}
	}
	g.absorb(g.Group.Revoke(tps))
	if g.err == nil && g.open {
		if stuck := g.drainedUnfinished(tps); len(stuck) > 0 {
			g.abort(fmt.Errorf("revoke: %w (%s)", errDrainUnfinished, strings.Join(stuck, ", ")), !g.stageFailed())
		} else {
			g.settle(tps)
			switch err := g.barrier(deadline); {
			case err == nil:
				g.commit("revoke")
			case errors.Is(err, errStageStopped):
				g.abort(fmt.Errorf("revoke: %w", err), false) // Run is stopping: as at Shutdown
			default:
				g.abort(fmt.Errorf("revoke: %w", err), true)
			}
		}
	}
	g.forget(tps)
	if g.err == nil && g.draining {
		g.tryCommit() // the revoke committed: deliver what was held
	}
	return nil
}

// settle records that the drained partitions tps finished all they will:
// drainedUnfinished found none of them with a record fed to the graph
// and left unfinished, so the records after their final offsets were
// still queued when the drain began and were dropped: they produced
// nothing. Their final offsets are what the transaction commits.
func (g *Group) settle(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		if p := g.parts[tp]; p != nil && p.inTxn {
			p.delivered = p.done
		}
	}
}

// Lose implements sluice.Group. A lost partition with records in the open
// transaction aborts it: their outputs must not commit, and neither may
// the other partitions' outputs without the lost ones' offsets. The
// partitions kept that had records in it are rewound (abort.go).
func (g *Group) Lose(tps []sluice.TopicPartition) {
	g.Group.Lose(tps)
	var held []string
	if g.err == nil && g.open {
		for _, tp := range tps {
			if p := g.parts[tp]; p != nil && p.inTxn {
				held = append(held, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
			}
		}
	}
	g.forget(tps)
	if len(held) > 0 {
		g.abort(fmt.Errorf("partitions lost with records in the transaction (%s)", strings.Join(held, ", ")), true)
	}
}

// Shutdown implements sluice.Group: every partition drains, then the
// transaction commits with their final offsets. It aborts instead when
// the drain left records unfinished (drained.go): they may have produced
// part of their outputs, and the records after them all of theirs, which
// must not commit with offsets behind them. After a stage error stopped
// Run (ctx's cause is a *sluice.StageError) that stops the Group (Err
// wraps ErrAborted); otherwise the Group only logs a warning, as nothing
// is at risk: nothing of the transaction is visible, and the next owners
// process the records again from the last committed transaction. Held
// records are dropped (they were never processed). It returns nothing for
// the source to commit.
func (g *Group) Shutdown() []sluice.Offset {
	g.deferred, g.deferredCause = nil, nil // their graphs are cancelled: nothing of them commits
	g.absorb(g.Group.Shutdown())
	if g.err == nil && g.open {
		stuck := g.drainedUnfinished(g.owned())
		switch {
		case len(stuck) > 0 && g.stageFailed():
			g.abort(fmt.Errorf("shutdown after a stage error with records unfinished (%s)", strings.Join(stuck, ", ")), false)
		case len(stuck) > 0:
			g.abortShutdown(fmt.Errorf("shutdown: %w (%s)", errDrainUnfinished, strings.Join(stuck, ", ")),
				"exactly-once shutdown: records did not finish in the drain; the last transaction aborted (its outputs discarded, its offsets not committed): the next owners process the records again from the last committed transaction")
		default:
			g.settle(g.owned())
			g.commit("shutdown")
		}
	}
	g.draining = false
	clear(g.parts)
	return nil
}

// absorb records the runtime's committable offsets.
func (g *Group) absorb(offs []sluice.Offset) {
	for _, o := range offs {
		if p := g.parts[o.TopicPartition]; p != nil {
			p.done = o.Next
		}
	}
}

func (g *Group) forget(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		delete(g.parts, tp)
	}
}

// unfinished names the partitions of tps with delivered records the
// runtime has not finished.
func (g *Group) unfinished(tps []sluice.TopicPartition) []string {
	var out []string
	for _, tp := range tps {
		if p := g.parts[tp]; p != nil && p.inTxn && p.done != p.delivered {
			out = append(out, fmt.Sprintf("%s/%d at %d of %d", tp.Topic, tp.Partition, p.done, p.delivered))
		}
	}
	return out
}

// errStageStopped: a stage error is stopping Run while records are in
// flight; the failed record never finishes.
var errStageStopped = errors.New("a stage error stopped Run with records in flight")

// barrier waits, until deadline, for every record delivered to finish. It
// gives up at once (errStageStopped) when a stage error is stopping Run:
// waiting for the drain timeout would only hold the poll loop, and the
// partitions the revoke lets go, that long (a fenced zombie's refused
// produce is such an error).
func (g *Group) barrier(deadline time.Time) error {
	for {
		g.absorb(g.Group.Offsets())
		stuck := g.unfinished(g.owned())
		if len(stuck) == 0 {
			return nil
		}
		if g.stageFailed() {
			return fmt.Errorf("%w (%s)", errStageStopped, strings.Join(stuck, ", "))
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("records in flight did not finish within the drain timeout %v (%s)", g.DrainTimeout(), strings.Join(stuck, ", "))
		}
		time.Sleep(min(wait, barrierPoll))
	}
}

// errAbandoned is the cause of the abort that replaces any commit once
// Run abandoned a user function.
var errAbandoned = errors.New("a user function that ignored its context was abandoned and may still produce into the open transaction")

// abandoned reports whether Run stopped because it abandoned a user
// function that ignored its context (sluice.ErrAbandoned). Such a
// function still runs: what it produces once it returns lands in
// whatever transaction is open then, outputs of a record whose offset no
// transaction commits. So no transaction commits after it.
func (g *Group) abandoned() bool {
	return errors.Is(context.Cause(g.ctx), sluice.ErrAbandoned)
}

// stageFailed reports whether Run's context ended because of a stage
// error (its cause is a *sluice.StageError).
func (g *Group) stageFailed() bool {
	var se *sluice.StageError
	return errors.As(context.Cause(g.ctx), &se)
}

func (g *Group) owned() []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, 0, len(g.parts))
	for tp := range g.parts {
		out = append(out, tp)
	}
	return out
}

// commit commits the open transaction with the offsets every partition
// finished since the last commit; the barrier must be reached. A failed
// commit aborts. After a function was abandoned it aborts instead and
// stops the Group (see abandoned).
func (g *Group) commit(why string) {
	if g.abandoned() {
		g.abort(fmt.Errorf("%s: %w", why, errAbandoned), false)
		return
	}
	var offs []sluice.Offset
	for tp, p := range g.parts {
		if p.done >= 0 && p.done != p.committed {
			offs = append(offs, sluice.Offset{TopicPartition: tp, Next: p.done})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.CommitTimeoutOrDefault())
	start := time.Now()
	err := g.txn.Commit(ctx, offs)
	cancel()
	g.Group.Committed(offs, time.Since(start), err)
	if err != nil {
		cause := fmt.Errorf("%s: committing the transaction with offsets %v: %w", why, offs, err)
		if why == "shutdown" && errors.Is(err, ErrGroupMoved) {
			g.abortShutdown(cause, // abort.go
				"exactly-once shutdown: the group refused the last transaction's offsets; aborted, the next owners start from the last committed transaction")
			return
		}
		g.abort(cause, why != "shutdown")
		return
	}
	g.open = false
	for _, p := range g.parts {
		p.committed = max(p.committed, p.done)
		p.inTxn = false
	}
}
