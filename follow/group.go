package follow

import "github.com/sluice-go/sluice"

// group is the sluice.Group the inner source sees. It is only used from
// the source's poll goroutine, as the contract requires; what the poller
// reads reaches it through shared.
type group struct {
	sluice.Group // the runtime's: Offsets, DrainTimeout, Joined, ... pass through

	sh    *shared
	hooks []Hook
	parts map[sluice.TopicPartition]*part
	order []sluice.TopicPartition // owned, in assignment order
	seen  uint64                  // shared.version last applied
}

// part is one owned partition.
type part struct {
	leaders int64           // the leaders' offset applied, -1 when none
	held    []sluice.Record // delivered by the source, not yet handed on; our own array
	// next is one past the last record handed on to the runtime since the
	// assignment, -1 before the first.
	next int64
	// runtimePaused: the runtime's Deliver asked for a pause that its
	// Resumable has not lifted yet; sourcePaused: a Deliver of ours
	// returned true and our Resumable has not listed the partition since.
	runtimePaused, sourcePaused bool
	reported                    Status
}

func newGroup(g sluice.Group, sh *shared, hooks []Hook) *group {
	return &group{Group: g, sh: sh, hooks: hooks, parts: make(map[sluice.TopicPartition]*part)}
}

// Assign assigns tps in the runtime, then starts holding their records
// until the leaders' offsets are read (a read is asked for at once).
func (g *group) Assign(tps []sluice.TopicPartition) error {
	err := g.Group.Assign(tps)
	var added []sluice.TopicPartition
	for _, tp := range tps {
		if g.parts[tp] != nil {
			continue
		}
		p := &part{leaders: -1, next: -1}
		g.parts[tp] = p
		g.order = append(g.order, tp)
		added = append(added, tp)
	}
	if len(added) > 0 {
		g.sh.own(added)
		for _, tp := range added {
			g.report(tp, g.parts[tp], true)
		}
	}
	return err
}

// Revoke drops the held records of tps, then drains them in the runtime.
func (g *group) Revoke(tps []sluice.TopicPartition) []sluice.Offset {
	g.drop(tps)
	return g.Group.Revoke(tps)
}

// Lose drops the held records of tps, then loses them in the runtime.
func (g *group) Lose(tps []sluice.TopicPartition) {
	g.drop(tps)
	g.Group.Lose(tps)
}

// Shutdown drops every held record, then shuts the runtime down.
func (g *group) Shutdown() []sluice.Offset {
	g.drop(append([]sluice.TopicPartition(nil), g.order...))
	return g.Group.Shutdown()
}

func (g *group) drop(tps []sluice.TopicPartition) {
	var gone []sluice.TopicPartition
	for _, tp := range tps {
		p := g.parts[tp]
		if p == nil {
			continue
		}
		delete(g.parts, tp)
		gone = append(gone, tp)
		p.held = nil
		g.report(tp, p, false)
	}
	if len(gone) == 0 {
		return
	}
	g.order = deleteTPs(g.order, g.parts)
	g.sh.disown(gone)
}

// Deliver hands on the records of recs below the leaders' offset and holds
// the rest, returning pause=true while it holds any or the runtime asked
// for a pause. Records arriving while some are held are held behind them,
// so the runtime still gets them in offset order.
func (g *group) Deliver(tp sluice.TopicPartition, recs []sluice.Record) bool {
	p := g.parts[tp]
	if p == nil || len(recs) == 0 {
		return g.Group.Deliver(tp, recs) // not ours: the runtime drops or ignores it
	}
	g.sync()
	if len(p.held) == 0 && !p.runtimePaused {
		n := releasable(recs, p.leaders)
		if n == len(recs) {
			g.handOn(tp, p, recs)
			g.report(tp, p, true)
			p.sourcePaused = p.sourcePaused || p.runtimePaused
			return p.runtimePaused
		}
	}
	// Hold them behind what is held already, in our own array (recs may
	// be part of the source's buffer), then hand on what may go.
	p.held = append(p.held, recs...)
	pause := g.release(tp, p)
	g.report(tp, p, true)
	p.sourcePaused = p.sourcePaused || pause
	return pause
}

// Resumable lifts the runtime's pauses it lists, hands on the held records
// the leaders have committed since, and lists the partitions the source
// paused for us that hold nothing now and that the runtime has room for.
func (g *group) Resumable() []sluice.TopicPartition {
	g.sync()
	for _, tp := range g.Group.Resumable() {
		if p := g.parts[tp]; p != nil {
			p.runtimePaused = false
		}
	}
	var out []sluice.TopicPartition
	for _, tp := range g.order {
		p := g.parts[tp]
		if !p.sourcePaused || g.release(tp, p) {
			continue
		}
		p.sourcePaused = false
		out = append(out, tp)
	}
	return out
}

// release hands on the held records below the leaders' offset unless the
// runtime paused tp, and reports whether tp must stay paused.
func (g *group) release(tp sluice.TopicPartition, p *part) (paused bool) {
	if p.runtimePaused {
		return true
	}
	if n := releasable(p.held, p.leaders); n > 0 {
		g.handOn(tp, p, p.held[:n:n])
		p.held = p.held[n:]
		if len(p.held) == 0 {
			p.held = nil
		}
		g.report(tp, p, true)
	}
	return p.runtimePaused || len(p.held) > 0
}

// handOn delivers recs (not empty) to the runtime and moves tp's position
// past them.
func (g *group) handOn(tp sluice.TopicPartition, p *part, recs []sluice.Record) {
	p.runtimePaused = g.Group.Deliver(tp, recs)
	p.next = recs[len(recs)-1].Offset + 1
}

// lag is Status.Lag of p: the leaders' offset minus the offset of the next
// record not handed on yet (the first held one, else one past the last
// handed on), at least 0; -1 when either is unknown.
func (p *part) lag() int64 {
	pos := p.next
	if len(p.held) > 0 {
		pos = p.held[0].Offset
	}
	if p.leaders < 0 || pos < 0 {
		return -1
	}
	return max(0, p.leaders-pos)
}

// Wake is signalled when the runtime's Wake is, and when a read changed
// the leaders' offsets.
func (g *group) Wake() <-chan struct{} { return g.sh.wake }

// Polled applies a new read of the leaders' offsets (for the hooks), then
// reports the poll to the runtime.
func (g *group) Polled() {
	g.sync()
	g.Group.Polled()
}

// sync applies the leaders' offsets read since the last call.
func (g *group) sync() {
	v := g.sh.version.Load()
	if v == g.seen {
		return
	}
	g.seen = v
	g.sh.mu.Lock()
	for _, tp := range g.order {
		g.parts[tp].leaders = g.sh.offset(tp)
	}
	g.sh.mu.Unlock()
	for _, tp := range g.order {
		g.report(tp, g.parts[tp], true)
	}
}

// report tells the hooks tp's status if it changed.
func (g *group) report(tp sluice.TopicPartition, p *part, owned bool) {
	if len(g.hooks) == 0 {
		return
	}
	st := Status{TopicPartition: tp, Leaders: p.leaders, Held: len(p.held), Lag: p.lag(), Owned: owned}
	if !owned {
		st.Held, st.Lag = 0, -1
	}
	if st == p.reported {
		return
	}
	p.reported = st
	for _, h := range g.hooks {
		h.OnFollowerStatus(st)
	}
}

// releasable returns how many records at the head of recs are below the
// leaders' offset (all of them when every offset is).
func releasable(recs []sluice.Record, leaders int64) int {
	n := 0
	for n < len(recs) && recs[n].Offset < leaders {
		n++
	}
	return n
}

// deleteTPs returns order without the partitions absent from parts.
func deleteTPs(order []sluice.TopicPartition, parts map[sluice.TopicPartition]*part) []sluice.TopicPartition {
	out := order[:0]
	for _, tp := range order {
		if parts[tp] != nil {
			out = append(out, tp)
		}
	}
	clear(order[len(out):])
	return out
}
