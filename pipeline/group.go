package pipeline

import (
	"context"
	"sync"

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

	mu        sync.Mutex
	inflight  int64
	bytes     int64
	paused    map[*graph]struct{}
	resumable []TopicPartition
	err       error
}

func newRuntime(parent context.Context, cancel context.CancelCauseFunc, cfg config, b Builder) *runtime {
	rt := &runtime{cfg: cfg, build: b, parent: parent, cancel: cancel,
		wake: make(chan struct{}, 1), paused: make(map[*graph]struct{})}
	rt.m = rebalance.New(rt.start)
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
	if g != nil && g.ctx.Err() != nil {
		rt.cfg.logger.Debug("sluice: error after the partition was taken away", "topic", g.tp.Topic,
			"partition", g.tp.Partition, "err", err)
		return
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

// full reports whether g (or the whole consumer) holds too much. Callers
// hold rt.mu.
func (rt *runtime) full(g *graph) bool {
	return g.pending.Load() >= int64(rt.cfg.partitionQueue) ||
		rt.inflight >= int64(rt.cfg.maxInFlight) || rt.bytes >= rt.cfg.maxBytes
}

// roomFor reports whether a paused g may resume: half of its own queue and
// a quarter of the global budget are free. Callers hold rt.mu.
func (rt *runtime) roomFor(g *graph) bool {
	return g.pending.Load() <= int64(rt.cfg.partitionQueue/2) &&
		rt.inflight <= int64(rt.cfg.maxInFlight)*3/4 && rt.bytes <= rt.cfg.maxBytes*3/4
}

// completed is called (from any goroutine) when n records of g became
// committable.
func (rt *runtime) completed(g *graph, n int, b int64) {
	rt.release(n, b)
}

// release returns n records and b bytes to the budget and moves paused
// partitions that have room again to the resumable list.
func (rt *runtime) release(n int, b int64) {
	rt.mu.Lock()
	rt.inflight -= int64(n)
	rt.bytes -= b
	for pg := range rt.paused {
		if rt.roomFor(pg) {
			delete(rt.paused, pg)
			pg.paused = false
			rt.resumable = append(rt.resumable, pg.tp)
		}
	}
	rt.mu.Unlock()
	rt.signal()
}

// Assign implements Group.
func (rt *runtime) Assign(tps []TopicPartition) error {
	if err := rt.m.Assign(tps); err != nil {
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

// forget takes stopped graphs out of the pause set and returns what they
// held to the budget.
func (rt *runtime) forget(gs []*graph) {
	rt.mu.Lock()
	for _, g := range gs {
		delete(rt.paused, g)
	}
	rt.mu.Unlock()
	for _, g := range gs {
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
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.inflight += int64(len(recs))
	rt.bytes += b
	if rt.full(g) {
		if !g.paused {
			g.paused = true
			rt.paused[g] = struct{}{}
		}
		return true
	}
	return false
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
