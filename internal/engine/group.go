package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Group is the runtime of one [Run], handed to the source: it implements
// sluice.Group (the methods the source calls from its poll goroutine)
// and holds the partitions' graphs, the in-flight budget that drives pause
// and resume (backpressure.go), and the first fatal error.
type Group struct {
	cfg    Config
	build  Builder
	parent context.Context
	cancel context.CancelCauseFunc
	m      *assignments[TopicPartition, *graph] // owned partitions (assignments.go)
	wake   chan struct{}
	hooks  *hookSet  // Config.Hooks by event (hooks.go)
	watch  *watchdog // nil unless Config.Stuck

	// The budget (see backpressure.go) is atomic so that completing records,
	// which happens per value on stage goroutines, takes no lock unless
	// records wait for admission. It only grows under mu. It has cache
	// lines of its own: every completion writes it, while the fields
	// around it are read on every completion and delivery (hooks, wake,
	// cfg), which would otherwise miss the cache each time.
	_        [cacheLine]byte
	inflight atomic.Int64
	bytes    atomic.Int64
	nwaiting atomic.Int32 // len(waiting)
	_        [cacheLine]byte
	// The InFlight hooks are called one at a time, by whoever holds
	// inFlightMu, while inFlightChanged is set (inflight_report.go).
	inFlightMu      sync.Mutex
	inFlightChanged atomic.Bool
	// segments holds the trackers' free slot segments, shared by every
	// partition (segments.go).
	segments segmentPool
	// chunks holds the edges' free chunks, shared by every partition
	// (edges_pool.go).
	chunks chunkPools
	// later holds the stages with completions kept by DoneLater, which
	// the runtime flushes whenever it needs their values completed
	// (done_later.go).
	later laterStages

	mu      sync.Mutex
	paused  []*graph // paused partitions, oldest pause first
	waiting []*graph // partitions with records waiting for admission, first come first
	// The largest delivery seen, in records and bytes: what one resumed
	// partition is expected to deliver at once.
	batchRecords int64
	batchBytes   int64
	err          error
	// late: errors of partitions drained by Shutdown that must reach Run's
	// caller although their partition was being taken away.
	late         []error
	shuttingDown atomic.Bool
	share        *shareAcks // share mode (share.go); set before the first Assign
	// unfinished: what Unfinished returns (drained.go); poll goroutine only.
	unfinished []TopicPartition
	// slots: the consumer-wide objects the Run's graphs use, by where
	// they use them (kit.go, claimSlot).
	slotsMu sync.Mutex
	slots   map[sharedSlot]any
}

// cacheLine is the padding that keeps fields written often by one
// goroutine off the cache lines of fields that others read.
const cacheLine = 64

func newGroup(parent context.Context, cancel context.CancelCauseFunc, cfg Config, b Builder) *Group {
	rt := &Group{cfg: cfg, build: b, parent: parent, cancel: cancel, hooks: newHookSet(cfg.Hooks),
		wake: make(chan struct{}, 1)}
	rt.m = newAssignments(rt.start)
	if cfg.Stuck > 0 {
		rt.watch = &watchdog{rt: rt, threshold: cfg.Stuck, probes: make(map[*graph][]*Probe)}
	}
	return rt
}

func (rt *Group) start(tp TopicPartition) (*graph, error) {
	g := newGraph(rt, tp)
	if rt.share != nil {
		g.tr.share, g.tr.tp = rt.share, tp
	}
	if err := g.build(rt.build); err != nil {
		return nil, err
	}
	return g, nil
}

// fail records the first fatal error and starts shutdown. Errors of a
// graph whose partition was already taken away are expected (its context
// was cancelled under it) and ignored.
func (rt *Group) fail(g *graph, err error) {
	if g != nil && g.stopping() {
		rt.cfg.Logger.Warn("sluice: error while the partition was being taken away; its record stays uncommitted",
			"topic", g.tp.Topic, "partition", g.tp.Partition, "err", err)
		return
	}
	var se *StageError
	if errors.As(err, &se) {
		rt.hooks.StageFailed(se.Stage, TopicPartition{Topic: se.Topic, Partition: se.Partition}, err)
	}
	rt.mu.Lock()
	first := rt.err == nil
	if first {
		rt.err = err
	}
	rt.mu.Unlock()
	if first {
		rt.cfg.Logger.Error("sluice: stopping", "err", err)
		rt.cancel(err)
	}
}

// failLate records an error of a partition drained by Shutdown that Run
// must return, after the first fatal error if there is one.
func (rt *Group) failLate(err error) {
	rt.cfg.Logger.Error("sluice: error during shutdown", "err", err)
	var se *StageError
	if errors.As(err, &se) {
		rt.hooks.StageFailed(se.Stage, TopicPartition{Topic: se.Topic, Partition: se.Partition}, err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.late = append(rt.late, err)
}

// fatal returns what Run returns: the first fatal error, joined with the
// errors recorded during shutdown.
func (rt *Group) fatal() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.late) == 0 {
		return rt.err
	}
	return errors.Join(append([]error{rt.err}, rt.late...)...)
}

func (rt *Group) signal() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// release returns n records and b bytes to the budget, admits waiting
// records into the room it made and wakes the source, whose next
// Resumable call resumes paused partitions that have room. It locks only
// when records wait for admission.
func (rt *Group) release(n int, b int64) {
	rt.inflight.Add(int64(-n))
	rt.bytes.Add(-b)
	// The common case, per completion: no record waits, no admission to
	// report.
	var a admission
	if rt.nwaiting.Load() != 0 {
		rt.mu.Lock()
		rt.admitWaitingLocked(&a)
		rt.mu.Unlock()
	}
	rt.signal()
	rt.reportInFlight()
	a.report(rt)
}

// Assign implements sluice.Group.
func (rt *Group) Assign(tps []TopicPartition) error {
	err := rt.m.Assign(tps)
	for _, tp := range tps {
		if _, ok := rt.m.Worker(tp); ok {
			rt.hooks.PartitionAssigned(tp)
		}
	}
	if err != nil {
		rt.fail(nil, err)
		return err
	}
	rt.cfg.Logger.Info("sluice: partitions assigned", "partitions", tps)
	return nil
}

// Revoke implements sluice.Group.
func (rt *Group) Revoke(tps []TopicPartition) []Offset {
	_, gs := rt.m.Revoke(tps)
	return rt.finish(gs)
}

// Shutdown implements sluice.Group.
func (rt *Group) Shutdown() []Offset {
	rt.shuttingDown.Store(true)
	_, gs := rt.m.Shutdown()
	return rt.finish(gs)
}

// Lose implements sluice.Group.
func (rt *Group) Lose(tps []TopicPartition) {
	rt.forget(rt.m.Lose(tps))
}

// forget takes stopped graphs out of the pause list (which a later
// assignment of their partitions must not inherit) and out of the
// admission queue (their waiting records are dropped, never counted), and
// returns what they held to the budget.
func (rt *Group) forget(gs []*graph) {
	rt.mu.Lock()
	for _, g := range gs {
		rt.unpauseLocked(g)
		rt.unwaitLocked(g)
	}
	rt.mu.Unlock()
	for _, g := range gs {
		rt.watch.forget(g)
		rt.release(g.tr.drop())
	}
}

// finish returns the final offsets of drained graphs, records which of
// them left records unfinished (Unfinished) and forgets them.
func (rt *Group) finish(gs []*graph) []Offset {
	var out []Offset
	rt.unfinished = nil
	for _, g := range gs {
		if next := g.tr.committable(); next >= 0 {
			out = append(out, Offset{TopicPartition: g.tp, Next: next})
		}
		if g.tr.unfinishedFed() {
			rt.unfinished = append(rt.unfinished, g.tp)
		}
	}
	rt.forget(gs)
	if len(gs) > 0 {
		rt.cfg.Logger.Info("sluice: partitions revoked", "offsets", out)
	}
	return out
}

// Deliver implements sluice.Group. It admits into the graph what the budget has
// room for; the rest waits for admission (behind every partition already
// waiting) and the partition is paused.
func (rt *Group) Deliver(tp TopicPartition, recs []Record) bool {
	g, ok := rt.m.Worker(tp)
	if !ok || len(recs) == 0 || g.isClosing() {
		return false
	}
	var b int64
	for i := range recs {
		b += recordBytes(&recs[i])
	}
	if rt.later.n.Load() != 0 && !rt.roomFor(g, len(recs), b) {
		rt.later.flush()
	}
	var a admission
	rt.mu.Lock()
	rt.batchRecords, rt.batchBytes = max(rt.batchRecords, int64(len(recs))), max(rt.batchBytes, b)
	if len(rt.waiting) == 0 {
		n, nb := rt.fitLocked(recs, b)
		if n > 0 && !rt.admitLocked(g, recs[:n], nb, &a) {
			rt.mu.Unlock()
			return false
		}
		recs = recs[n:]
	}
	if len(recs) > 0 {
		rt.waitLocked(g, recs)
		// A release that freed room before g was queued did not admit
		// it: try now that a release would.
		rt.admitWaitingLocked(&a)
	}
	newlyPaused := false
	if !g.paused && (len(g.waiting) > 0 || rt.full(g)) {
		rt.pauseLocked(g)
		newlyPaused = true
	}
	pause := g.paused
	rt.mu.Unlock()
	a.report(rt)
	if newlyPaused {
		rt.hooks.PartitionPaused(tp)
	}
	return pause
}

// Resumable implements sluice.Group. Paused partitions resume in turn (see
// resumableLocked); when more had room, Wake is signalled again so that
// the source comes back for them after the resumed ones delivered.
func (rt *Group) Resumable() []TopicPartition {
	rt.later.flush() // what the stages kept makes room too (done_later.go)
	rt.mu.Lock()
	out, more := rt.resumableLocked()
	rt.mu.Unlock()
	if more {
		rt.signal()
	}
	for _, tp := range out {
		rt.hooks.PartitionResumed(tp)
	}
	return out
}

// Wake implements sluice.Group.
func (rt *Group) Wake() <-chan struct{} { return rt.wake }

// Offsets implements sluice.Group.
func (rt *Group) Offsets() []Offset {
	rt.later.flush() // what the stages kept is committable (done_later.go)
	var out []Offset
	for tp, g := range rt.m.All() {
		if next := g.tr.committable(); next >= 0 && next != g.reported {
			g.reported = next
			out = append(out, Offset{TopicPartition: tp, Next: next})
		}
	}
	return out
}

// Polled implements sluice.Group.
func (rt *Group) Polled() {
	rt.later.stale() // lists kept behind a call that blocks (done_later.go)
	rt.hooks.Polled()
}

// Joined implements sluice.Group.
func (rt *Group) Joined() { rt.hooks.Joined() }

// Committed implements sluice.Group.
func (rt *Group) Committed(offs []Offset, took time.Duration, err error) {
	if err != nil {
		rt.cfg.Logger.Warn("sluice: commit failed", "offsets", offs, "err", err)
	}
	rt.hooks.Committed(offs, took, err)
}

// DrainTimeout implements sluice.Group.
func (rt *Group) DrainTimeout() time.Duration { return rt.cfg.DrainTimeout }

// MaxInFlight implements sluice.Group: Config.MaxInFlight.
func (rt *Group) MaxInFlight() int { return rt.cfg.MaxInFlight }

// MaxInFlightBytes implements sluice.Group: Config.MaxInFlightBytes.
func (rt *Group) MaxInFlightBytes() int64 { return rt.cfg.MaxInFlightBytes }

// HighWatermark implements sluice.Group.
func (rt *Group) HighWatermark(tp TopicPartition, high int64) { rt.hooks.HighWatermark(tp, high) }
