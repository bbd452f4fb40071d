package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// The slow section models a stage that waits on I/O: every record goes
// through Pool(slowWorkers) whose function sleeps slowCall (the I/O
// call) and records it, on a topic of slowPartitions partitions. The
// graph is built per partition, so as many calls may run at once as
// slowPartitions × slowWorkers, and the ideal rate is that many calls
// per slowCall. A run also reports the most calls that ran at once and
// the most in-flight bytes the budget admitted (sluice.HookInFlight),
// which must stay within the budget.
const (
	slowPartitions = 64
	slowWorkers    = 32
	slowCall       = time.Millisecond
)

// slowCases are the slow section's cases, one per backend.
var slowCases = []string{"sluice-confluent-slow64", "sluice-franz-slow64"}

// slowIdeal is the rate of the slow section's graph if every Pool worker
// of every partition were always calling: partitions × slowWorkers calls
// per slowCall.
func slowIdeal(partitions int) float64 {
	return float64(partitions*slowWorkers) / slowCall.Seconds()
}

// sluiceSlow is the slow section's case: Pool(slowWorkers) of a
// slowCall sleep that records the record, then Discard.
func sluiceSlow(src newSource) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		g := cfg.gauges
		return runSluice(ctx, cfg, src, w, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			called := stages.Pool(in, slowWorkers, func(_ context.Context, r sluice.Record) (struct{}, error) {
				g.calls.note(g.calling.Add(1))
				time.Sleep(slowCall) // the I/O call this section models
				g.calling.Add(-1)
				return struct{}{}, recordOrFail(tr, r.Partition, r.Offset, valueHash(r.Value))
			})
			return stages.Discard(called)
		}, pipeline.WithHooks(inFlightPeak{g}))
	}
}

// gauges are the peaks a case may report besides its records: the most
// calls of its slow function at once and the most in-flight bytes.
type gauges struct {
	calling  atomic.Int64 // calls running now
	calls    peak
	inFlight peak // bytes, as sluice.HookInFlight reports them
}

// peak is the largest value noted.
type peak struct{ v atomic.Int64 }

func (p *peak) note(x int64) {
	for {
		c := p.v.Load()
		if x <= c || p.v.CompareAndSwap(c, x) {
			return
		}
	}
}

func (p *peak) max() int64 { return p.v.Load() }

// inFlightPeak is the hook that notes the in-flight bytes' peak.
type inFlightPeak struct{ g *gauges }

// OnInFlight notes bytes.
func (h inFlightPeak) OnInFlight(_, bytes int64) { h.g.inFlight.note(bytes) }

// checkSlow checks a slow run's peaks against the contracts they bound:
// Pool(slowWorkers) runs at most that many calls per partition at once,
// and the budget bounds the in-flight bytes.
func checkSlow(rn run) error {
	var errs []error
	if most := int64(rn.l.partitions * slowWorkers); rn.res.PeakCalls < 1 || rn.res.PeakCalls > most {
		errs = append(errs, fmt.Errorf("%d calls at once at most: Pool(%d) on %d partitions allows 1 to %d", rn.res.PeakCalls, slowWorkers, rn.l.partitions, most))
	}
	if rn.res.PeakBytes < 1 || rn.res.PeakBytes > rn.budget {
		errs = append(errs, fmt.Errorf("%d bytes in flight at most: the budget is %d", rn.res.PeakBytes, rn.budget))
	}
	return errors.Join(errs...)
}
