package engine

import "slices"

// This file is the global in-flight budget: admitting delivered records
// into the graphs only within the limits, queueing what does not fit, and
// resuming paused partitions in turn.
//
// Records are counted from admission (queued for a graph's feeder) until
// they leave the tracker. Admissions happen under rt.mu, so the limits are
// never exceeded; completions only decrease the counters and take no lock
// unless records wait for admission.

// full reports whether g (or the whole consumer) holds too much to go on
// delivering.
func (rt *Group) full(g *graph) bool {
	return g.pending.Load() >= int64(rt.cfg.PartitionQueue) ||
		rt.inflight.Load() >= int64(rt.cfg.MaxInFlight) || rt.bytes.Load() >= rt.cfg.MaxInFlightBytes
}

// Saturated reports whether a delivery of any partition would now only
// be queued for admission and pause its partition: records wait for
// admission, or the records or bytes in flight reached their limit. When
// it would hold while stages keep completions (DoneLater), it completes
// them first and looks again (done_later.go); otherwise it takes no lock.
// It is safe from any goroutine; a completion may end it at any time. A
// source that can leave what its client fetched with the client (kgo)
// takes nothing while it holds.
func (rt *Group) Saturated() bool {
	if !rt.saturated() {
		return false
	}
	if rt.later.n.Load() == 0 {
		return true
	}
	// Values whose call returned may hold the budget (done_later.go).
	rt.later.flush()
	return rt.saturated()
}

func (rt *Group) saturated() bool {
	return rt.nwaiting.Load() != 0 || rt.inflight.Load() >= int64(rt.cfg.MaxInFlight) ||
		rt.bytes.Load() >= rt.cfg.MaxInFlightBytes
}

// roomFor reports whether n records weighing b bytes would be admitted
// into g at once and leave g unpaused: nothing waits for admission and
// they fit the budget and g's queue. It takes no lock; a completion may
// change the answer at any time.
func (rt *Group) roomFor(g *graph, n int, b int64) bool {
	return rt.nwaiting.Load() == 0 && rt.inflight.Load()+int64(n) < int64(rt.cfg.MaxInFlight) &&
		rt.bytes.Load()+b < rt.cfg.MaxInFlightBytes && g.pending.Load()+int64(n) < int64(rt.cfg.PartitionQueue)
}

// threeQuarters returns floor(3n/4) for n >= 0 without overflowing.
func threeQuarters(n int64) int64 { return n/4*3 + n%4*3/4 }

// fitLocked returns how many of recs, from the first, the budget admits
// now, and what they weigh: records while fewer than the limit are in
// flight, bytes while they stay within the byte limit, except that a
// record heavier than what is left goes alone when no bytes are in flight
// (else it would never fit). total is what all of recs weigh, or -1 when
// the caller did not sum it. Callers hold rt.mu.
func (rt *Group) fitLocked(recs []Record, total int64) (int, int64) {
	in, by := rt.inflight.Load(), rt.bytes.Load()
	if total >= 0 && int64(len(recs)) <= int64(rt.cfg.MaxInFlight)-in && total <= rt.cfg.MaxInFlightBytes-by {
		return len(recs), total // all fit: no need to weigh them one by one
	}
	n, sum := 0, int64(0)
	for n < len(recs) && in < int64(rt.cfg.MaxInFlight) {
		b := recordBytes(&recs[n])
		if by > 0 && b > rt.cfg.MaxInFlightBytes-by {
			break
		}
		in, by, n, sum = in+1, by+b, n+1, sum+b
	}
	return n, sum
}

// admission collects what admissions under rt.mu must report to observers
// once the lock is released. The first few deliveries are kept inline, so
// that a Deliver (one admission) allocates nothing.
type admission struct {
	first [4]delivery
	n     int
	more  []delivery
}

func (a *admission) add(d delivery) {
	if a.n < len(a.first) {
		a.first[a.n] = d
		a.n++
		return
	}
	a.more = append(a.more, d)
}

type delivery struct {
	tp TopicPartition
	n  int
}

func (a *admission) report(rt *Group) {
	for _, d := range a.first[:a.n] {
		rt.hooks.RecordsDelivered(d.tp, d.n)
	}
	for _, d := range a.more {
		rt.hooks.RecordsDelivered(d.tp, d.n)
	}
	if a.n > 0 {
		rt.reportInFlight()
	}
}

// admitLocked hands recs to g's feeder and counts them in the budget. It
// returns false, admitting nothing, when g is closing. Callers hold rt.mu.
func (rt *Group) admitLocked(g *graph, recs []Record, b int64, a *admission) bool {
	if !g.deliver(recs, b) {
		return false
	}
	rt.inflight.Add(int64(len(recs)))
	rt.bytes.Add(b)
	a.add(delivery{tp: g.tp, n: len(recs)})
	return true
}

// waitLocked queues recs of g for admission, behind every partition
// already waiting. Callers hold rt.mu.
func (rt *Group) waitLocked(g *graph, recs []Record) {
	if len(g.waiting) == 0 {
		rt.waiting = append(rt.waiting, g)
		rt.nwaiting.Add(1)
	}
	// Admission takes records from the front (g.waiting = g.waiting[n:]),
	// so append alone would regrow and copy the queue again and again while
	// a source keeps delivering to a partition the budget holds back (the
	// contract lets it; the Kafka sources keep such records themselves).
	// Move what waits back to the start of the array kept in waitBuf when
	// that makes room; the array only grows to the most that ever waited.
	if need := len(g.waiting) + len(recs); need > cap(g.waiting) && need <= cap(g.waitBuf) {
		n := copy(g.waitBuf, g.waiting)
		clear(g.waitBuf[n:])
		g.waiting = g.waitBuf[:n]
	}
	g.waiting = append(g.waiting, recs...)
	if cap(g.waiting) > cap(g.waitBuf) {
		g.waitBuf = g.waiting[:cap(g.waiting)]
	}
}

// admitWaitingLocked admits waiting records first come, first served, as
// far as the budget allows. Records of a graph that is closing are
// dropped. Callers hold rt.mu.
func (rt *Group) admitWaitingLocked(a *admission) {
	for len(rt.waiting) > 0 {
		g := rt.waiting[0]
		n, b := rt.fitLocked(g.waiting, -1)
		if n == 0 {
			return
		}
		if !rt.admitLocked(g, g.waiting[:n], b, a) {
			n = len(g.waiting)
		}
		clear(g.waiting[:n])
		g.waiting = g.waiting[n:]
		if len(g.waiting) > 0 {
			return // admitted in part: the budget is full
		}
		rt.unwaitLocked(g)
	}
}

// unwaitLocked takes g out of the admission queue, dropping what it still
// had waiting. Callers hold rt.mu.
func (rt *Group) unwaitLocked(g *graph) {
	if i := slices.Index(rt.waiting, g); i >= 0 {
		rt.waiting = slices.Delete(rt.waiting, i, i+1)
		rt.nwaiting.Add(-1)
	}
	clear(g.waiting) // drop the records, keep the array
	g.waiting = g.waitBuf[:0]
}

// pauseLocked marks g paused, last in the resume order. Callers hold rt.mu.
func (rt *Group) pauseLocked(g *graph) {
	g.paused = true
	rt.paused = append(rt.paused, g)
}

// unpauseLocked takes g out of the pause list. Callers hold rt.mu.
func (rt *Group) unpauseLocked(g *graph) {
	if !g.paused {
		return
	}
	g.paused = false
	if i := slices.Index(rt.paused, g); i >= 0 {
		rt.paused = slices.Delete(rt.paused, i, i+1)
	}
}

// resumableLocked takes out of the pause list, oldest pause first, the
// partitions that have room again, but only as many as the free budget has
// room for one delivery each (the largest delivery seen so far), and at
// least one. It reports whether more had room: they get their turn at the
// next call, once those resumed now delivered. Nothing resumes while
// records wait for admission, or while the budget is above three quarters
// of either limit (hysteresis). Callers hold rt.mu.
func (rt *Group) resumableLocked() (out []TopicPartition, more bool) {
	in, by := rt.inflight.Load(), rt.bytes.Load()
	maxIn := int64(rt.cfg.MaxInFlight)
	if len(rt.paused) == 0 || len(rt.waiting) > 0 || in > threeQuarters(maxIn) || by > threeQuarters(rt.cfg.MaxInFlightBytes) {
		return nil, false
	}
	turns := (maxIn - in) / max(rt.batchRecords, 1)
	if rt.batchBytes > 0 {
		turns = min(turns, (rt.cfg.MaxInFlightBytes-by)/rt.batchBytes)
	}
	turns = max(turns, 1)
	half := int64(rt.cfg.PartitionQueue / 2)
	kept := rt.paused[:0]
	for _, g := range rt.paused {
		if g.pending.Load() > half {
			kept = append(kept, g)
			continue
		}
		if int64(len(out)) == turns {
			more = true
			kept = append(kept, g)
			continue
		}
		g.paused = false
		out = append(out, g.tp)
	}
	clear(rt.paused[len(kept):])
	rt.paused = kept
	return out, more
}
