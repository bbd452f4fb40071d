package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/internal/rebalance"
)

// runtime implements Group for one Run: the partitions' graphs, the
// in-flight budget that drives pause and resume, and the first fatal error.
type runtime struct {
	cfg    config
	build  Builder
	parent context.Context
	cancel context.CancelCauseFunc
	m      *rebalance.Machine[TopicPartition, *graph]
	wake   chan struct{}
	obs    Observer
	// observed: observers were configured, so stages time their calls.
	observed bool
	watch    *watchdog // nil unless WithStuckThreshold

	// The budget is atomic so that completing records, which happens per
	// value on stage goroutines, takes no lock unless something is paused.
	inflight atomic.Int64
	bytes    atomic.Int64
	npaused  atomic.Int32 // len(paused)

	mu        sync.Mutex
	paused    map[*graph]struct{}
	resumable []TopicPartition
	err       error
}

func newRuntime(parent context.Context, cancel context.CancelCauseFunc, cfg config, b Builder) *runtime {
	rt := &runtime{cfg: cfg, build: b, parent: parent, cancel: cancel, obs: observerOf(cfg.observers), observed: len(cfg.observers) > 0,
		wake: make(chan struct{}, 1), paused: make(map[*graph]struct{})}
	rt.m = rebalance.New(rt.start)
	if cfg.stuck > 0 {
		rt.watch = &watchdog{rt: rt, threshold: cfg.stuck, probes: make(map[*graph][]*Probe)}
	}
	return rt
}

func (rt *runtime) start(tp TopicPartition) (*graph, error) {
	g := newGraph(rt, tp)
	if err := g.build(rt.build); err != nil {
		return nil, err
	}
	return g, nil
}

// fail records the first fatal error and starts shutdown. Errors of a
// graph whose partition was already taken away are expected (its context
// was cancelled under it) and ignored.
func (rt *runtime) fail(g *graph, err error) {
	if g != nil && g.stopping() {
		rt.cfg.logger.Warn("sluice: error while the partition was being taken away; its record stays uncommitted",
			"topic", g.tp.Topic, "partition", g.tp.Partition, "err", err)
		return
	}
	var se *StageError
	if errors.As(err, &se) {
		rt.obs.StageFailed(se.Stage, TopicPartition{Topic: se.Topic, Partition: se.Partition}, err)
	}
	rt.mu.Lock()
	first := rt.err == nil
	if first {
		rt.err = err
	}
	rt.mu.Unlock()
	if first {
		rt.cfg.logger.Error("sluice: stopping", "err", err)
		rt.cancel(err)
	}
}

func (rt *runtime) fatal() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.err
}

func (rt *runtime) signal() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// full reports whether g (or the whole consumer) holds too much.
func (rt *runtime) full(g *graph) bool {
	return g.pending.Load() >= int64(rt.cfg.partitionQueue) ||
		rt.inflight.Load() >= int64(rt.cfg.maxInFlight) || rt.bytes.Load() >= rt.cfg.maxBytes
}

// roomFor reports whether a paused g may resume: half of its own queue and
// a quarter of the global budget are free.
func (rt *runtime) roomFor(g *graph) bool {
	return g.pending.Load() <= int64(rt.cfg.partitionQueue/2) &&
		rt.inflight.Load() <= threeQuarters(int64(rt.cfg.maxInFlight)) && rt.bytes.Load() <= threeQuarters(rt.cfg.maxBytes)
}

// threeQuarters returns floor(3n/4) for n >= 0 without overflowing.
func threeQuarters(n int64) int64 { return n/4*3 + n%4*3/4 }

// release returns n records and b bytes to the budget and moves paused
// partitions that have room again to the resumable list. It locks only
// when some partition is paused.
func (rt *runtime) release(n int, b int64) {
	records, bytes := rt.inflight.Add(int64(-n)), rt.bytes.Add(-b)
	var resumed []TopicPartition
	if rt.npaused.Load() > 0 {
		rt.mu.Lock()
		for pg := range rt.paused {
			if rt.roomFor(pg) {
				rt.unpauseLocked(pg)
				rt.resumable = append(rt.resumable, pg.tp)
				resumed = append(resumed, pg.tp)
			}
		}
		rt.mu.Unlock()
	}
	rt.signal()
	rt.obs.InFlight(records, bytes)
	for _, tp := range resumed {
		rt.obs.PartitionResumed(tp)
	}
}

// unpauseLocked takes g out of the pause set. Callers hold rt.mu.
func (rt *runtime) unpauseLocked(g *graph) {
	if _, ok := rt.paused[g]; ok {
		delete(rt.paused, g)
		rt.npaused.Add(-1)
	}
	g.paused = false
}

// Assign implements Group.
func (rt *runtime) Assign(tps []TopicPartition) error {
	err := rt.m.Assign(tps)
	for _, tp := range tps {
		if _, ok := rt.m.Worker(tp); ok {
			rt.obs.PartitionAssigned(tp)
		}
	}
	if err != nil {
		rt.fail(nil, err)
		return err
	}
	rt.cfg.logger.Info("sluice: partitions assigned", "partitions", tps)
	return nil
}

// Revoke implements Group.
func (rt *runtime) Revoke(tps []TopicPartition) []Offset {
	_, gs := rt.m.Revoke(tps)
	return rt.finish(gs)
}

// Shutdown implements Group.
func (rt *runtime) Shutdown() []Offset {
	_, gs := rt.m.Shutdown()
	return rt.finish(gs)
}

// Lose implements Group.
func (rt *runtime) Lose(tps []TopicPartition) {
	rt.forget(rt.m.Lose(tps))
}

// forget takes stopped graphs out of the pause set (and their partitions
// out of the resumable list, which a later assignment must not inherit)
// and returns what they held to the budget.
func (rt *runtime) forget(gs []*graph) {
	rt.mu.Lock()
	for _, g := range gs {
		rt.unpauseLocked(g)
		rt.resumable = slices.DeleteFunc(rt.resumable, func(tp TopicPartition) bool { return tp == g.tp })
	}
	rt.mu.Unlock()
	for _, g := range gs {
		rt.watch.forget(g)
		rt.release(g.tr.drop())
	}
}

// finish returns the final offsets of stopped graphs and forgets them.
func (rt *runtime) finish(gs []*graph) []Offset {
	var out []Offset
	for _, g := range gs {
		if next := g.tr.committable(); next >= 0 {
			out = append(out, Offset{TopicPartition: g.tp, Next: next})
		}
	}
	rt.forget(gs)
	if len(gs) > 0 {
		rt.cfg.logger.Info("sluice: partitions revoked", "offsets", out)
	}
	return out
}

// Deliver implements Group.
func (rt *runtime) Deliver(tp TopicPartition, recs []Record) bool {
	g, ok := rt.m.Worker(tp)
	if !ok || len(recs) == 0 || !g.deliver(recs) {
		return false
	}
	var b int64
	for i := range recs {
		b += recordBytes(&recs[i])
	}
	rt.obs.RecordsDelivered(tp, len(recs))
	records, bytes := rt.inflight.Add(int64(len(recs))), rt.bytes.Add(b)
	rt.obs.InFlight(records, bytes)
	if !rt.full(g) {
		return false
	}
	rt.mu.Lock()
	newlyPaused := !g.paused
	if newlyPaused {
		g.paused = true
		rt.paused[g] = struct{}{}
		rt.npaused.Add(1)
		// A release that freed the budget between the check above and
		// the insertion did not see g: check again now that it would.
		if rt.roomFor(g) {
			rt.unpauseLocked(g)
			rt.mu.Unlock()
			return false
		}
	}
	rt.mu.Unlock()
	if newlyPaused {
		rt.obs.PartitionPaused(tp)
	}
	return true
}

// Resumable implements Group.
func (rt *runtime) Resumable() []TopicPartition {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r := rt.resumable
	rt.resumable = nil
	return r
}

// Wake implements Group.
func (rt *runtime) Wake() <-chan struct{} { return rt.wake }

// Offsets implements Group.
func (rt *runtime) Offsets() []Offset {
	var out []Offset
	for _, tp := range rt.m.Owned() {
		g, _ := rt.m.Worker(tp)
		if next := g.tr.committable(); next >= 0 && next != g.reported {
			g.reported = next
			out = append(out, Offset{TopicPartition: tp, Next: next})
		}
	}
	return out
}

// Polled implements Group.
func (rt *runtime) Polled() { rt.obs.Polled(time.Now()) }

// Joined implements Group.
func (rt *runtime) Joined() { rt.obs.Joined() }

// Committed implements Group.
func (rt *runtime) Committed(offs []Offset, took time.Duration, err error) {
	if err != nil {
		rt.cfg.logger.Warn("sluice: commit failed", "offsets", offs, "err", err)
	}
	rt.obs.Committed(offs, took, err)
}

// HighWatermark implements Group.
func (rt *runtime) DrainTimeout() time.Duration { return rt.cfg.drainTimeout }

func (rt *runtime) HighWatermark(tp TopicPartition, high int64) { rt.obs.HighWatermark(tp, high) }
