package engine

import (
	"context"
	"sync"
)

// Partition is the partition a graph is built for, handed to the
// [Builder]. Its context and close hooks are the graph's lifecycle.
type Partition struct {
	Topic     string
	Partition int32
	// Public is the value package pipeline hands to the builder for this
	// partition (its *pipeline.Partition), set by pipeline's builder
	// adapter before the builder runs, so that stagekit's
	// Stage.Partition returns that same value. Nil for graphs built
	// without package pipeline (this package's tests).
	Public any

	ctx     context.Context
	mu      sync.Mutex
	onClose []func(context.Context) error
}

// Context returns the partition's context. It is done when the graph must
// stop: after a graceful revoke drained (cause [sluice.ErrRevoked]), when
// the drain timed out ([sluice.ErrDrainTimeout]), when the partition was
// lost ([sluice.ErrLost]), or when a stage misused a ticket (the
// *StageError wrapping [ErrTicketCompleted] that stops Run).
// Values of the context given to [Run] are visible through it; Run's own
// cancellation is not (shutdown drains gracefully first).
func (p *Partition) Context() context.Context { return p.ctx }

// OnClose registers fn to run when the graph is taken away: after every
// stage goroutine exited (drained, timed out or lost) and before the final
// offset is reported to the source. Hooks run in reverse order of
// registration, one at a time; ctx expires after the drain timeout. An
// error or a panic in a hook stops Run (the other hooks still run): Run
// returns a *StageError whose Stage is "OnClose", naming the partition
// (Offset -1), whose Err is the hook's error or a *PanicError. A hook
// still running the exit grace after ctx expired is abandoned (abandon.go):
// Run stops with ErrAbandoned and the hooks registered before it do not
// run; nor do the hooks of a graph whose goroutines were abandoned.
// OnClose may be called from the builder or from a stage.
func (p *Partition) OnClose(fn func(ctx context.Context) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onClose = append(p.onClose, fn)
}

func (p *Partition) hooks() []func(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.onClose
	p.onClose = nil
	return h
}
