package testkit

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// DeadLetters is a dead-letter destination for tests: it records every
// dead letter handed to it, in arrival order, so a test can assert which
// records were found invalid, by which stage and why. Pass [DeadLetters.Func]
// to pipeline.WithDeadLetter (or use [DeadLetters.Option]).
//
// Its methods are safe for concurrent use: the runtime calls the function
// from one goroutine per partition while the test reads the snapshots. It
// works inside testing/synctest bubbles (create it inside the bubble when
// Wait is used there). The zero value is not usable; call
// [NewDeadLetters].
type DeadLetters struct {
	r recorder[sluice.DeadLetter]
}

// NewDeadLetters returns an empty recorder that accepts every dead letter.
func NewDeadLetters() *DeadLetters {
	return &DeadLetters{r: newRecorder[sluice.DeadLetter]()}
}

// Func returns the dead-letter function to pass to pipeline.WithDeadLetter.
// Each call is counted (see [DeadLetters.Calls]); it then asks the failure
// function set by [DeadLetters.FailWith], if any: when that returns an
// error, the call returns it and records nothing (the runtime retries it
// unless it is sluice.Permanent); otherwise the letter is recorded and
// the call returns nil. The context is not looked at.
func (d *DeadLetters) Func() func(context.Context, sluice.DeadLetter) error {
	return func(_ context.Context, dl sluice.DeadLetter) error { return d.r.accept(dl) }
}

// Option returns pipeline.WithDeadLetter(d.Func()).
func (d *DeadLetters) Option() pipeline.Option { return pipeline.WithDeadLetter(d.Func()) }

// FailWith makes later deliveries call fn first: a non-nil error from fn
// is what the delivery returns (nothing is recorded), to test what a
// pipeline does when its dead-letter destination fails. fn is called
// outside the recorder's lock, from the partitions' dead-letter goroutines,
// possibly concurrently. FailWith(nil) accepts everything again. It may be
// called at any time, also while Run runs.
func (d *DeadLetters) FailWith(fn func(sluice.DeadLetter) error) { d.r.failWith(fn) }

// Records returns a copy of the dead letters recorded so far, in the order
// they arrived (offset order within a partition; partitions interleave).
func (d *DeadLetters) Records() []sluice.DeadLetter { return d.r.recorded() }

// Offsets returns the offsets of the partition's recorded dead letters, in
// arrival order (nil when there are none).
func (d *DeadLetters) Offsets(topic string, partition int32) []int64 {
	return collect(&d.r, func(dl sluice.DeadLetter) (int64, bool) {
		return dl.Record.Offset, dl.Record.Topic == topic && dl.Record.Partition == partition
	})
}

// Len returns how many dead letters were recorded.
func (d *DeadLetters) Len() int {
	return d.r.recordedLen()
}

// Calls returns how many times the function was called, failed calls
// (see [DeadLetters.FailWith]) included.
func (d *DeadLetters) Calls() int {
	return d.r.callCount()
}

// Wait blocks until at least n dead letters were recorded and returns a
// snapshot of them (as Records). It fails the test if that takes longer
// than [WaitTimeout]; inside a synctest bubble that means every goroutine
// is blocked: the letters will never come. A negative n is a test bug and
// fails the test.
func (d *DeadLetters) Wait(t testing.TB, n int) []sluice.DeadLetter {
	t.Helper()
	return d.r.wait(t, n, "DeadLetters.Wait", d.describe)
}

// describe says what was recorded, for failure messages.
func (d *DeadLetters) describe() string {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	s := fmt.Sprintf("%d dead letters recorded (%d calls)", len(d.r.items), d.r.calls)
	for i, dl := range d.r.items {
		if i == 5 {
			s += ", ..."
			break
		}
		s += fmt.Sprintf(", %s/%d@%d from %s", dl.Record.Topic, dl.Record.Partition, dl.Record.Offset, dl.Stage)
	}
	return s
}
