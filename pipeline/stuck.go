package pipeline

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Probe marks which value a stage goroutine is working on, so the stuck
// detector (see [WithStuckThreshold]) can tell a value that stays in one
// stage too long. Create one per goroutine that calls user functions, with
// [Stage.Probe]; Enter and Leave cost one atomic store each.
type Probe struct {
	stage *Stage
	cur   atomic.Uint64 // ticket id being worked on, 0 when idle

	// watchdog state, owned by the watchdog goroutine
	seen     uint64
	since    time.Time
	reported bool
}

// Enter records that the goroutine starts working on the value of t.
func (p *Probe) Enter(t Ticket) { p.cur.Store(t.id) }

// Leave records that the goroutine finished that value.
func (p *Probe) Leave() { p.cur.Store(0) }

// Probe returns a new probe for one goroutine of the stage. It may be
// called from the stage's run function; probes live as long as the graph.
func (s *Stage) Probe() *Probe {
	p := &Probe{stage: s}
	s.g.rt.watch.add(s.g, p)
	return p
}

// watchdog finds values stuck in a stage: every tick it samples each
// probe, and a probe that shows the same value for a whole threshold is
// reported once, with every goroutine's stack in the log.
type watchdog struct {
	rt        *runtime
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

func (w *watchdog) sample(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
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
				w.report(g, p, Ticket{id: cur}, now.Sub(p.since))
			}
		}
	}
}

func (w *watchdog) report(g *graph, p *Probe, t Ticket, since time.Duration) {
	offset := int64(-1)
	if recs := g.tr.records(nil, t); len(recs) > 0 {
		offset = recs[0].Offset
	}
	buf := make([]byte, 1<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	w.rt.cfg.logger.Warn(fmt.Sprintf("sluice: value stuck in stage %q for %v", p.stage.name, since),
		"topic", g.tp.Topic, "partition", g.tp.Partition, "offset", offset, "stage", p.stage.name,
		"goroutines", string(buf))
	w.rt.obs.Stuck(p.stage.name, g.tp, offset, since)
}

// MinStuckThreshold is the smallest threshold [WithStuckThreshold]
// accepts: the detector samples every quarter threshold.
const MinStuckThreshold = time.Millisecond

// WithStuckThreshold turns on the stuck detector: when one value has been
// in one stage's user function for longer than d, Run logs the stage, the
// partition, the offset and every goroutine's stack (once per value) and
// reports it to observers. Off by default. d below [MinStuckThreshold]
// makes Run return an error naming the option and the value.
func WithStuckThreshold(d time.Duration) Option {
	return func(c *config) {
		if d < MinStuckThreshold {
			c.bad("WithStuckThreshold(%v): the threshold must be at least %v", d, MinStuckThreshold)
		}
		c.stuck = d
	}
}
