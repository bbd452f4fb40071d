package engine

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Probe marks which value a stage goroutine is working on, so the stuck
// detector (see pipeline.WithStuckThreshold) can tell a value that stays in one
// stage too long. Create one per goroutine that calls user functions, with
// [Stage.Probe]; Enter and Leave cost one atomic store each while the
// detector is on, and nothing when it is off.
type Probe struct {
	stage *Stage
	off   bool // no stuck detector: Enter and Leave do nothing
	// cur has a cache line of its own: the probes of one stage's
	// goroutines (a Pool's workers) are written on every value from
	// different cores.
	_   [64]byte
	cur atomic.Uint64 // ticket id being worked on, 0 when idle
	_   [56]byte

	// watchdog state, owned by the watchdog goroutine
	seen     uint64
	since    time.Time
	reported bool
}

// Enter records that the goroutine starts working on the value of t.
func (p *Probe) Enter(t Ticket) {
	if !p.off {
		p.cur.Store(t.id)
	}
}

// Leave records that the goroutine finished that value.
func (p *Probe) Leave() {
	if !p.off {
		p.cur.Store(0)
	}
}

// Probe returns a new probe for one goroutine of the stage. It may be
// called from the stage's run function; probes live as long as the graph.
func (s *Stage) Probe() *Probe {
	p := &Probe{stage: s, off: s.g.rt.watch == nil}
	s.g.rt.watch.add(s.g, p)
	return p
}

// watchdog finds values stuck in a stage: every tick it samples each
// probe, and a probe that shows the same value for a whole threshold is
// reported once: a warning naming it, every goroutine's stack at debug level.
type watchdog struct {
	rt        *Group
	threshold time.Duration

	mu     sync.Mutex
	probes map[*graph][]*Probe
}

func (w *watchdog) add(g *graph, p *Probe) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.probes[g] = append(w.probes[g], p)
}

func (w *watchdog) forget(g *graph) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.probes, g)
}

// run samples the probes every quarter threshold until stop is closed.
func (w *watchdog) run(stop <-chan struct{}) {
	t := time.NewTicker(w.threshold / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			w.sample(now)
		}
	}
}

// stuckValue is one stuck report, logged after the sampling.
type stuckValue struct {
	g      *graph
	stage  string
	offset int64
	since  time.Duration
}

// sample reports the values stuck for a threshold to observers, under
// w.mu, then logs them (and, at debug level, every goroutine's stack,
// which is slow) without it. Holding w.mu while reporting orders every report of a
// partition before forget returns, which the runtime calls before it
// reports the partition revoked or lost.
func (w *watchdog) sample(now time.Time) {
	var stuck []stuckValue
	w.mu.Lock()
	for g, probes := range w.probes {
		for _, p := range probes {
			cur := p.cur.Load()
			switch {
			case cur == 0:
				p.seen = 0
			case cur != p.seen:
				p.seen, p.since, p.reported = cur, now, false
			case !p.reported && now.Sub(p.since) >= w.threshold:
				p.reported = true
				if s, ok := w.report(g, p, Ticket{id: cur}, now.Sub(p.since)); ok {
					stuck = append(stuck, s)
				}
			}
		}
	}
	w.mu.Unlock()
	if len(stuck) == 0 {
		return
	}
	log := w.rt.cfg.Logger
	for _, s := range stuck {
		log.Warn(fmt.Sprintf("sluice: value stuck in stage %q for %v", s.stage, s.since),
			"topic", s.g.tp.Topic, "partition", s.g.tp.Partition, "offset", s.offset, "stage", s.stage,
			"stuck_for", s.since.String())
	}
	// Every goroutine's stack is kilobytes per goroutine: a line of its
	// own, at debug level, taken only when the logger keeps it.
	if ctx := context.Background(); log.Enabled(ctx, slog.LevelDebug) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		log.Debug("sluice: goroutines when a value was found stuck", "goroutines", string(buf))
	}
}

// report tells observers that the value of t is stuck, while the
// tracker's lock shows its first record not committable yet: the report
// then comes before the completion that passes that record. It returns
// false, reporting nothing, when the value completed meanwhile.
func (w *watchdog) report(g *graph, p *Probe, t Ticket, since time.Duration) (stuckValue, bool) {
	s := stuckValue{g: g, stage: p.stage.name, since: since}
	ok := g.tr.withFirstRecord(t, func(r *Record) {
		s.offset = r.Offset
		w.rt.hooks.Stuck(s.stage, g.tp, s.offset, since)
	})
	return s, ok
}
