package pipeline

import (
	"context"

	"github.com/sluice-go/sluice/internal/engine"
)

// Partition is the partition a graph is built for, handed to the
// [Builder]; its context and close hooks are the graph's lifecycle. Run
// creates one each time a partition is assigned, and every stage of that
// graph gets the same *Partition from stagekit's Stage.Partition. Only
// Run creates Partitions; changing its fields changes nothing Run does.
type Partition struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition number, as in [sluice.TopicPartition]
	// and [sluice.Record].
	Partition int32

	p *engine.Partition
}

// newPartition returns the Partition standing for p, and records it in p
// for stagekit's Stage.Partition.
func newPartition(p *engine.Partition) *Partition {
	pp := &Partition{Topic: p.Topic, Partition: p.Partition, p: p}
	p.Public = pp
	return pp
}

// Context returns the partition's context, for the builder and for any
// goroutine of the graph's stages. It is done when the graph must stop:
// after a graceful revoke drained (cause [sluice.ErrRevoked]), when the
// drain timed out ([sluice.ErrDrainTimeout]), when the partition was lost
// ([sluice.ErrLost]; at once, without a drain), or when a stage misused a
// ticket (the *sluice.StageError wrapping stagekit.ErrTicketCompleted that
// stops Run). Values of the context given to [Run] are visible through it;
// Run's own cancellation is not: at shutdown the partition drains
// gracefully first, as on a revoke.
func (p *Partition) Context() context.Context { return p.p.Context() }

// OnClose registers fn to run when the graph is taken away (revoke, loss,
// shutdown, or Run stopping after an error): after every stage goroutine
// exited (drained, timed out or lost) and before the final offset is
// reported to the source. It may be called from the builder or from a
// stage, from any goroutine, until the graph is taken away; a hook
// registered later never runs.
//
// Hooks run in reverse order of registration, one at a time, each on a
// goroutine of its own; ctx expires after the drain timeout
// ([WithDrainTimeout]). An error or a panic in a hook stops Run (the other
// hooks still run): Run returns a *sluice.StageError whose Stage is
// "OnClose", naming the partition (Offset -1), whose Err is the hook's
// error or a *sluice.PanicError. A hook still running a quarter of the
// drain timeout (at least 1 s) after ctx expired is abandoned: Run stops
// with such an error wrapping [sluice.ErrAbandoned], and the hooks
// registered before it do not run; nor do the hooks of a graph whose
// stage goroutines were abandoned.
func (p *Partition) OnClose(fn func(ctx context.Context) error) { p.p.OnClose(fn) }
