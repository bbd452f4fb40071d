package engine

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// This file paces what a partition's graph holds to what it can drain.
//
// A drain (revoke, shutdown) finishes what the graph was fed; records still
// queued for the feeder are dropped, never processed. What a graph can
// hold is otherwise set by its edges and stages (4 chunks of 256 values per
// edge, a Pool's queues: thousands of records), whatever its speed: a
// graph whose records each take 50 ms (a slow key in a PoolByKey) would
// hold minutes of work, and every revoke would hit the drain timeout. So
// the feeder keeps the records fed and not yet committable (held) below a
// limit:
//
//   - at first one chunk (Config.Chunk), or the most values a stage of
//     the graph keeps before it emits anything (StageSpec.Holds: a
//     Batch's size) if that is more, growing by each record completed (a
//     slow start: the limit doubles per round trip of a fast graph). A
//     Batch larger than the first limit could not fill its first batch:
//     it would complete nothing until its maxWait (or the stall rule
//     below) and the partition would wait that long after every
//     assignment;
//   - once a rate is measured (records leaving the tracker, in offset
//     order, over at least a sixteenth of the horizon and one completion,
//     while input was waiting), what that rate completes in half the drain
//     timeout (the horizon), averaged with the previous measurement;
//   - doubled when the graph completed nothing for a sixteenth of the
//     horizon (or, if longer, the time the measured rate takes for four
//     completions, or twice the longest the committable offset recently
//     stood still while the feeder had input for the graph) while held at
//     the limit: a stage that waits for more input (a Batch without
//     maxWait) must get it; once a rate is measured, the limit never goes
//     back below the one that unblocked it. The last term keeps a graph
//     whose records complete in bursts (one record in fifty takes seconds,
//     the others finish behind it) from looking stalled at every slow
//     record: its limit would double each time and never come back down.
//
// A fast graph's limit is far above what its edges hold, so it binds only
// in the first round trips; the cost is one clock read per chunk fed and
// one atomic load per completion.

// pacer is one graph's feeder pacing. Its fields are the feeder
// goroutine's, except rate (read by drain logs) and waiting.
type pacer struct {
	horizon time.Duration // half the drain timeout
	window  time.Duration // shortest measurement: a sixteenth of horizon
	// rate is the measured completion rate in records per second, as
	// float64 bits; 0 while unmeasured.
	rate atomic.Uint64
	// waiting is set while the feeder waits for completions to make room;
	// completions then signal it (graph.qsig).
	waiting atomic.Bool

	limit     int    // most records held
	floor     int    // the limit never goes below it (a stall raised it)
	slowStart bool   // no rate measured yet
	last      uint64 // tracker base at the last observe
	t0        time.Time
	b0        uint64        // tracker base at t0: records completed before it
	starved   bool          // the input was empty at some point since t0
	waitBase  uint64        // tracker base when the feeder began waiting for room
	moved     time.Time     // when an observe last saw the base change
	still     time.Duration // longest recent time the base stood still while the feeder was busy (decays by an eighth per rate sample)
	idle      bool          // the feeder last stopped for lack of input
	armed     bool          // timer runs for the wait that began at waitBase
	timer     *time.Timer
}

// init sets the horizon from the drain timeout and the first limit.
func (p *pacer) init(drainTimeout time.Duration, chunk int) {
	p.horizon = drainTimeout / 2
	p.window = p.horizon / 16
	p.limit, p.floor, p.slowStart = chunk, 1, true
}

// holds raises the first limit to n, the most values a stage keeps
// before it emits anything (StageSpec.Holds). Called while the graph is
// wired, before the feeder starts.
func (p *pacer) holds(n int) {
	if p.slowStart && n > p.limit {
		p.raise(n)
	}
}

// measured returns the measured completion rate (records per second), 0
// when unmeasured.
func (p *pacer) measured() float64 { return math.Float64frombits(p.rate.Load()) }

// observe folds the tracker's progress at now into the limit: base is the
// number of records completed so far, starved whether no input waits
// now.
func (p *pacer) observe(now time.Time, base uint64, starved bool) {
	if p.slowStart {
		p.raise(p.limit + int(min(base-p.last, math.MaxInt32)))
	}
	if base != p.last {
		// Unless the feeder was idle for lack of input (then it observes
		// only at the next delivery), it observes a move of the base as it
		// happens: waiting for room, every completion wakes it, and a send
		// into a full graph returns as the graph moves on.
		if !p.idle && !p.moved.IsZero() {
			p.still = max(p.still, now.Sub(p.moved))
		}
		p.moved = now
	}
	p.last = base
	if p.t0.IsZero() {
		p.t0, p.b0, p.starved, p.moved = now, base, starved, now
		return
	}
	p.starved = p.starved || starved
	el, done := now.Sub(p.t0), base-p.b0
	if el < p.window || (done == 0 && el < p.horizon) {
		return
	}
	sample, old := float64(done)/el.Seconds(), p.measured()
	switch {
	case done == 0:
		// Nothing completed for a horizon: the stall rule (stalled) raises
		// the limit if input waits for room.
	case p.starved:
		// Input-limited: the sample only bounds the rate from below, and
		// the limit did not bind.
		if sample > old {
			p.rate.Store(math.Float64bits(sample))
			p.raise(max(p.limit, p.ofRate(sample)))
		}
	default:
		r := sample
		if old > 0 {
			r = (old + sample) / 2
		}
		p.rate.Store(math.Float64bits(r))
		p.slowStart = false
		p.limit = max(p.ofRate(r), p.floor)
	}
	p.t0, p.b0, p.starved = now, base, starved
	p.still -= p.still / 8
}

// ofRate is what rate (records per second) completes in a horizon, at
// least one record.
func (p *pacer) ofRate(rate float64) int {
	return int(min(max(math.Ceil(rate*p.horizon.Seconds()), 1), math.MaxInt32))
}

// raise sets the limit to n, at most MaxInt32.
func (p *pacer) raise(n int) { p.limit = min(n, math.MaxInt32) }

// wait returns a channel that fires after the stall time, for a feeder
// that waits for room from now on (base: the tracker's base now). The
// stall time is a window, or if longer the time the measured rate takes
// for four completions or twice the longest the base recently stood still
// while the feeder had input (still), at most a horizon.
func (p *pacer) wait(base uint64) <-chan time.Time {
	if p.armed && base == p.waitBase {
		return p.timer.C // still waiting since then: new input does not restart it
	}
	p.waitBase, p.armed = base, true
	d := max(p.window, 2*p.still)
	if r := p.measured(); r > 0 {
		d = max(d, time.Duration(4/r*float64(time.Second)))
	}
	d = min(d, p.horizon)
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	return p.timer.C
}

// stalled is called when the feeder waited the stall time for room: if
// nothing completed meanwhile (base unchanged), the graph may wait for
// more input, so the limit doubles. Once a rate is measured it stays at
// least that from now on; before, a graph whose records each take longer
// than the stall time looks stalled too, and its first measurement sets
// the limit.
func (p *pacer) stalled(base uint64) {
	p.armed = false
	if base == p.waitBase {
		p.raise(2 * p.limit)
		if !p.slowStart {
			p.floor = p.limit
		}
	}
}

// backlog returns, under one lock, how many records wait for the feeder,
// how many were fed and are not committable yet, and how many left the
// tracker since the graph started.
func (tr *tracker) backlog() (queued, held int, base uint64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	fed := max(tr.fed, tr.base) // unfed records may have left before the feeder passed them
	return int(tr.base + uint64(tr.size) - fed), int(fed - tr.base), tr.base
}

// drainTimedOut logs a drain that did not finish within the drain timeout,
// with what the graph still held, the rate it was paced to, and what to
// change.
func (g *graph) drainTimedOut() {
	_, held, _ := g.tr.backlog()
	rate := g.pace.measured()
	pace := "its completion rate was not measured yet (the graph is new: it was fed one chunk and as many records as it completed)"
	if rate > 0 {
		work := time.Duration(float64(held) / rate * float64(time.Second)).Round(time.Millisecond)
		pace = fmt.Sprintf("%v of work at its measured completion rate of %.1f records/s", work, rate)
	}
	g.rt.cfg.Logger.Warn(fmt.Sprintf("sluice: partition drain timed out; committing only what finished. "+
		"The graph still held %d records (fed, not committable), %s. "+
		"The runtime feeds a graph only what its measured rate finishes in half the drain timeout, so a drain that "+
		"times out means the graph slowed down during the drain or one record takes about the drain timeout: "+
		"raise pipeline.WithDrainTimeout above the longest a record takes, or make the slow stage faster "+
		"(more workers: stages.Pool). pipeline.WithPartitionQueue and the in-flight budget (WithMaxInFlight, "+
		"WithMaxInFlightBytes) do not change it: records still queued are dropped at a revoke, not drained", held, pace),
		"topic", g.tp.Topic, "partition", g.tp.Partition, "timeout", g.rt.cfg.DrainTimeout.String(),
		"held", held, "rate", rate)
}
