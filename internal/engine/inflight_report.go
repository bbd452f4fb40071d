package engine

// reportInFlight passes the budget's totals to the InFlight hooks after a
// change. The calls come one at a time, and the last one reports the
// totals as they are after the last change: a goroutine that changed them
// marks them changed, and the one holding the right to report
// (inFlightMu, taken without waiting) reports again, reading them anew,
// while they are marked. A goroutine that finds the right taken leaves
// its change to the holder.
func (rt *Group) reportInFlight() {
	if len(rt.hooks.inFlight) == 0 {
		return
	}
	rt.inFlightChanged.Store(true)
	for rt.inFlightChanged.Load() && rt.inFlightMu.TryLock() {
		rt.reportInFlightLocked()
	}
}

// reportInFlightLocked makes one report; the caller took inFlightMu, and
// it is released also when a hook panics.
func (rt *Group) reportInFlightLocked() {
	defer rt.inFlightMu.Unlock()
	rt.inFlightChanged.Store(false)
	rt.hooks.InFlight(rt.inflight.Load(), rt.bytes.Load())
}
