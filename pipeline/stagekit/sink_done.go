package stagekit

import (
	"time"

	"github.com/sluice-go/sluice/internal/engine"
)

// sinkDone completes the values of a [Sink], one goroutine's. A value
// whose call returned nil is done at once while calls are slow; while
// they are fast (the previous chunk's took under fastCall each, as an
// in-memory write does) completing each on its own would cost more than
// the call, so a chunk's values are kept (engine.Stage.DoneLater) and
// completed laterGroup at a time, at the end of the chunk and before a
// failure. A group that took longer than its values' share of fastCall
// ends the keeping for the rest of its chunk. The runtime completes kept
// values itself whenever it needs them while the stage is inside a call:
// when the in-flight budget is full and when it abandons the call
// (engine's done_later.go).
type sinkDone struct {
	s     *engine.Stage
	fast  bool      // the previous chunk's calls were fast
	later bool      // this chunk's values are kept
	kept  int       // kept since group began
	group time.Time // when the current group began
	chunk time.Time // when the current chunk began
	calls int       // calls made in the current chunk
}

const (
	// fastCall is the longest call whose value is kept: below it, one
	// value's completion on its own costs a large part of the call.
	fastCall = 5 * time.Microsecond
	// laterGroup is the most values kept at once.
	laterGroup = 32
)

// begin starts a chunk.
func (d *sinkDone) begin() {
	d.chunk, d.calls, d.kept = time.Now(), 0, 0
	d.group, d.later = d.chunk, d.fast
}

// done completes t, a value whose call returned nil.
func (d *sinkDone) done(t Ticket) {
	d.calls++
	if !d.later {
		d.s.Done(t.t)
		return
	}
	d.s.DoneLater(t.t)
	if d.kept++; d.kept < laterGroup {
		return
	}
	d.s.FlushDone()
	took := time.Since(d.group)
	if took > laterGroup*fastCall {
		d.later = false // the calls turned slow: each value on its own from here
		return
	}
	d.kept, d.group = 0, d.group.Add(took)
}

// failed counts a call that returned an error and completes what was kept
// before the stage reports it.
func (d *sinkDone) failed() {
	d.calls++
	d.flush()
}

// end completes what the chunk kept and decides from its calls' pace
// whether the next chunk keeps its values.
func (d *sinkDone) end() {
	d.flush()
	d.fast = d.calls > 0 && time.Since(d.chunk) <= time.Duration(d.calls)*fastCall
}

// flush completes what was kept.
func (d *sinkDone) flush() {
	if d.kept > 0 {
		d.s.FlushDone()
		d.kept = 0
	}
}
